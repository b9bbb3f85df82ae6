package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/airlock/airlock/executors/testkit"
)

// A page on another site, open in the user's browser, can open the
// executor channel on 127.0.0.1 with its own Origin. The browser below
// resolves evil.example to loopback, so the page is served by the test's
// own server and every byte stays on this machine.

// foreignSite is the attacker's site name, mapped to 127.0.0.1.
const foreignSite = "evil.example"

// channelProbe opens three sockets to the broker's channel and writes how
// each closed: one sends a page's catalog, one a made-up bearer's hello,
// one nothing.
const channelProbe = `<!doctype html><p id="catalog">open</p><p id="bearer">open</p><p id="silent">open</p><script>
const url = "ws://%s/local/channel";
function probe(id, frame) {
  const ws = new WebSocket(url);
  ws.onopen = () => { if (frame) ws.send(frame); };
  ws.onmessage = () => { document.getElementById(id).textContent = "got a message"; };
  ws.onclose = (e) => { document.getElementById(id).textContent = e.code + " " + e.reason; };
}
probe("catalog", JSON.stringify({type: "catalog", descriptors: [{descriptorId: "atk", tools: [{name: "echo", inputSchema: {}}],
  bounds: {timeoutMs: 1000, memoryMiB: 1, maxOutputBytes: 100, maxRequests: 0, allowedHosts: [], roots: []}}]}));
probe("bearer", JSON.stringify({type: "hello", role: "environment", bearer: "vbx_" + "A".repeat(43)}));
probe("silent", null);
</script>`

// TestBrowserPageOnForeignSiteGetsNothingFromTheChannel: a real browser
// page on another site goes through the hello like any foreign Origin
// and gets nothing: its catalog is refused executor-unauthenticated, its
// made-up bearer bearer-refused, its silent socket closed at the hello
// bound; each refusal is counted and nothing is attached.
func TestBrowserPageOnForeignSiteGetsNothingFromTheChannel(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_HELLO_BOUND_MS=400")
	w.pair("lab")
	hosts := make(chan string, 8)
	site := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case hosts <- r.Host:
		default:
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, channelProbe, w.broker.Addr)
	}))
	t.Cleanup(site.Close)
	br := browsertest.Start(t, chromedp.Flag("host-resolver-rules", "MAP "+foreignSite+" 127.0.0.1"))
	unauthenticated, refused := w.refusals("executor-unauthenticated"), w.refusals("bearer-refused")

	tab := br.First()
	tab.Navigate("http://" + foreignSite + ":" + portOf(site.URL) + "/")
	select {
	case h := <-hosts:
		if !strings.HasPrefix(h, foreignSite+":") {
			t.Fatalf("the page was served under %q, not %s", h, foreignSite)
		}
	default:
		t.Fatal("the browser loaded the page but the site saw no request")
	}
	tab.WaitFor("the catalog socket closed", text("#catalog"), "1008 executor-unauthenticated")
	tab.WaitFor("the bearer socket closed", text("#bearer"), "1008 bearer-refused")
	tab.WaitFor("the silent socket closed", text("#silent"), "1008 executor-unauthenticated")
	testkit.Eventually(t, "the refusals counted", func() bool {
		return w.refusals("executor-unauthenticated") == unauthenticated+2 && w.refusals("bearer-refused") == refused+1
	})
	w.wantNotAttached("atk")
}
