package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/airlock/airlock/executors/testkit"
)

// cutProxy stands between the page and the broker, as an extension's dev
// server does for its launch origin, so that the test can cut the view's
// socket (and refuse new ones) while the broker and the session live on.
type cutProxy struct {
	*httptest.Server
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func newCutProxy(t *testing.T, broker string) *cutProxy {
	t.Helper()
	target, err := url.Parse(broker)
	must(t, err)
	cp := &cutProxy{conns: map[net.Conn]struct{}{}}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			cp.mu.Lock()
			cp.conns[c] = struct{}{}
			cp.mu.Unlock()
		}
		return c, err
	}}
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	cp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.mu.Lock()
		down := cp.down
		cp.mu.Unlock()
		if down {
			http.Error(w, "proxy down", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { cp.Server.Close(); tr.CloseIdleConnections() })
	return cp
}

// setDown cuts every connection to the broker and refuses new ones, or
// lets them through again.
func (cp *cutProxy) setDown(down bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.down = down
	if down {
		for c := range cp.conns {
			_ = c.Close()
		}
		clear(cp.conns)
	}
}

// TestBrowserViewReconnect: the view's socket is cut while the session
// lives on; the page shows it reconnecting with backoff, marks its state
// stale, comes back by itself and asks the host for a snapshot after the
// last hostSequence it saw.
func TestBrowserViewReconnect(t *testing.T) {
	p := startSessions(t)
	proxy := newCutProxy(t, p.URL())
	b := browsertest.Start(t).First()
	_, host := openView(t, p, b, proxy.URL)
	host.send("focusNode", map[string]any{"nodeId": "conv1"}, 1)
	host.send("syncState", map[string]any{"state": "synced"}, 2)
	b.WaitFor("the sequence", text("#seq"), "2")

	// A capture is running when the socket drops.
	b.Click("#captureInspect .go")
	host.until("captureInspectRequest")

	proxy.setDown(true)
	// The broker cancels the view's request on the host and says the view
	// left (in either order).
	for seen := map[string]bool{}; !seen["captureInspectCancel"] || !seen["viewState"]; {
		m := host.next()
		seen[m.Type] = true
		if pl := payload(m); (m.Type == "viewState" && pl["state"] != "disconnected") || (m.Type == "captureInspectCancel" && pl["reason"] != "view-disconnected") {
			t.Fatalf("after the cut: %s", m.Raw)
		}
	}
	b.WaitFor("the capture lost with the socket", `document.getElementById("captureInspect").dataset.state`, "lost")
	b.WaitFor("reconnecting", `document.getElementById("conn").dataset.state`, "reconnecting")
	b.WaitFor("stale state", `document.getElementById("fresh").dataset.state`, "stale")
	b.WaitFor("a retry counted", has("#conn", "attempt"), "true")
	// The host moves on while the view is away.
	host.send("focusNode", map[string]any{"nodeId": "relu1"}, 3)
	b.Screenshot("01-reconnecting")

	proxy.setDown(false)
	if vs := payload(host.until("viewState")); vs["state"] != "connected" {
		t.Fatalf("viewState %v", vs)
	}
	ask := host.until("snapshotRequest")
	if v := payload(ask)["lastHostSequence"]; v != float64(2) {
		t.Fatalf("snapshotRequest after a reconnect: %s, want lastHostSequence 2", ask.Raw)
	}
	st := map[string]any{"activeTarget": demoState["activeTarget"], "projection": demoState["projection"], "focusNode": map[string]any{"nodeId": "relu1"}}
	host.send("snapshot", map[string]any{"atHostSequence": 3, "state": st}, 0)
	b.WaitFor("open again", `document.getElementById("conn").dataset.state`, "open")
	b.WaitFor("fresh again", `document.getElementById("fresh").dataset.state`, "fresh")
	b.WaitFor("the missed focus", attr(`#nodes button[data-node="relu1"]`, "aria-current"), "true")
	b.WaitFor("the sequence", text("#seq"), "3")
	// Requests work on the new socket.
	b.Click("#validate .go")
	host.reply(host.until("validateRequest"), "validateResult", map[string]any{"valid": true})
	b.WaitFor("validate's result", attr("#validate .out [data-valid]", "data-valid"), "true")
	b.Screenshot("02-reconnected")
}

// TestBrowserViewBrokerRestart: the broker stops (its sockets close 1001)
// and a new one comes up on the same port without the session (sessions
// live in memory): the page retries, is refused 4401, and says so for good
// instead of retrying forever.
func TestBrowserViewBrokerRestart(t *testing.T) {
	p := startSessions(t)
	b := browsertest.Start(t).First()
	openView(t, p, b, p.URL())
	p.Stop()
	b.WaitFor("reconnecting", `document.getElementById("conn").dataset.state`, "reconnecting")
	b.WaitFor("the going-away close in the log", has("#log", "[close 1001]"), "true")
	p2 := startServe(t, procOptions{Args: []string{"--no-builtin", "--listen", p.Addr},
		Env: []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}, Secrets: []string{sessionToken}})
	if p2.Addr != p.Addr {
		t.Fatalf("the new broker listens on %s, not %s", p2.Addr, p.Addr)
	}
	b.WaitFor("failed for good", `document.getElementById("conn").dataset.state`, "failed")
	b.WaitFor("the failure screen", `document.getElementById("screen").dataset.kind`, "failed")
	b.WaitFor("its reason", text("#screen-code"), "INVALID_CREDENTIALS [close 4401]")
	b.Screenshot("01-broker-restarted")
}

// TestBrowserViewExpired: the "session expired" screen, both ways: the
// link opened after expiry (bootstrap 410), and an open view when the
// session expires under it (close 4402, no reconnect).
func TestBrowserViewExpired(t *testing.T) {
	p := startSessions(t)
	b := browsertest.Start(t).First()

	m := p.mintFor(t, localclient.MintOptions{TTLSeconds: 1})
	testkit.Eventually(t, "the session to expire", func() bool {
		c, err := localclient.DialHost(tctx(t), p.URL(), m)
		if err != nil {
			return false
		}
		defer c.CloseNow()
		_, err = c.Hello(tctx(t))
		code, _ := localclient.CloseStatus(err)
		return code == 4402
	})
	b.Navigate(m.ViewURL(p.URL()))
	b.WaitFor("the expired screen", `document.getElementById("screen").dataset.kind`, "expired")
	b.WaitFor("its reason", text("#screen-code"), "CREDENTIAL_EXPIRED [HTTP 410]")
	b.WaitFor("the title", text("#screen-title"), "Session expired")
	b.WaitFor("the main view hidden", `String(document.getElementById("main").hidden)`, "true")
	b.Screenshot("01-expired-410")

	// An open view when the session expires: the page must have connected
	// before the TTL ends, so the TTL doubles until it did (a loaded
	// machine may take longer than a short one to open the page).
	for ttl := int64(2); ; ttl *= 2 {
		m := p.mintFor(t, localclient.MintOptions{TTLSeconds: ttl})
		b.Navigate("about:blank") // else only the fragment changes
		b.Navigate(m.ViewURL(p.URL()))
		b.WaitFor("the expired screen", `document.getElementById("screen").dataset.kind`, "expired")
		code := b.Eval(text("#screen-code"))
		if code == "CREDENTIAL_EXPIRED [close 4402]" {
			break
		}
		if code != "CREDENTIAL_EXPIRED [HTTP 410]" || ttl > 64 {
			t.Fatalf("expired screen with %q after a TTL of %d s", code, ttl)
		}
		t.Logf("the page opened after the %d s TTL; retrying longer", ttl)
	}
	b.WaitFor("the socket expired", `document.getElementById("conn").dataset.state`, "expired")
	b.WaitFor("the event log kept", has("#log", "expired: CREDENTIAL_EXPIRED"), "true")
	b.Screenshot("02-expired-4402")
}

// hostilePage is what a page on another loopback port tries against the
// broker while the user has a live view (its cookie is in the browser, and
// a page on another port of 127.0.0.1 is same-site, so the browser sends
// it): every outcome is written to #results as JSON.
const hostilePage = `<!doctype html><html><body><pre id="results">running</pre><script>
const B = %q, SID = %q;
const out = {};
function ws(name, path) {
  return new Promise((done) => {
    const r = { messages: [] };
    let s;
    try { s = new WebSocket(B.replace("http", "ws") + path); } catch (e) { r.threw = String(e); out[name] = r; return done(); }
    s.onopen = () => { r.opened = true; s.send(JSON.stringify({protocolVersion: 1, workspaceSessionId: SID, type: "hello", payload: {}})); s.send(JSON.stringify({type: "hello", role: "page"})); };
    s.onmessage = (e) => r.messages.push(String(e.data));
    s.onclose = (e) => { r.code = e.code; r.reason = e.reason; out[name] = r; done(); };
  });
}
async function get(name, path, init) {
  try { const res = await fetch(B + path, init); out[name] = { status: res.status, body: await res.text() }; }
  catch (e) { out[name] = { blocked: String(e.name) }; }
}
(async () => {
  await ws("ws", "/local/ws");
  await ws("localChannel", "/local/channel");
  await ws("channel", "/channel");
  await get("view", "/local/view", {});
  await get("client", "/local/view/client/view.js", {});
  await get("bootstrap", "/local/bootstrap", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({workspaceSessionId: SID, viewCredential: "x"})});
  await get("bootstrapSimple", "/local/bootstrap", {method: "POST", body: JSON.stringify({workspaceSessionId: SID, viewCredential: "x"})});
  document.getElementById("results").textContent = JSON.stringify(out);
})();
</script></body></html>`

// TestBrowserViewHostilePage: a page served from another loopback port,
// in the same browser as a live view, tries /local/ws, /local/channel,
// /channel and the broker's HTTP routes: every socket is refused before
// anything is relayed, and nothing it fetches is readable.
func TestBrowserViewHostilePage(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	victim := br.First()
	m, host := openView(t, p, victim, p.URL())

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, hostilePage, p.URL(), m.WorkspaceSessionID)
	}))
	t.Cleanup(evil.Close)
	if evil.URL == p.URL() {
		t.Fatal("the hostile page must be on another port")
	}
	tab := br.NewTab()
	tab.Navigate(evil.URL)
	testkit.Eventually(t, "the hostile page's results", func() bool { return tab.Eval(text("#results")) != "running" })
	var got map[string]struct {
		Opened   bool
		Messages []string
		Code     int
		Reason   string
		Status   int
		Body     string
		Blocked  string
	}
	raw := tab.Eval(text("#results"))
	must(t, jsonUnmarshal(raw, &got))
	t.Logf("the hostile page saw: %s", raw)
	for name, want := range map[string]struct {
		code   int
		reason string
	}{"ws": {4403, "INVALID_ORIGIN"}, "localChannel": {1008, "executor-unauthenticated"}, "channel": {1008, "executor-unauthenticated"}} {
		r := got[name]
		if r.Code != want.code || r.Reason != want.reason || len(r.Messages) != 0 {
			t.Errorf("%s: closed %d %q with %d messages %q, want %d %q and none", name, r.Code, r.Reason, len(r.Messages), r.Messages, want.code, want.reason)
		}
	}
	for _, name := range []string{"view", "client", "bootstrap", "bootstrapSimple"} {
		if r := got[name]; r.Blocked != "TypeError" || r.Body != "" {
			t.Errorf("%s: the hostile page read %d %q (blocked %q)", name, r.Status, r.Body, r.Blocked)
		}
	}
	// The host saw none of it: the victim's next action reaches the host with nothing of another view before it
	// (the victim's own second snapshot ask may come first: the view asks
	// on connected and again on the connectionState that follows).
	victim.Click(`#nodes button[data-node="conv1"]`)
	for next := host.next(); next.Type != "revealNode"; next = host.next() {
		if next.Type != "snapshotRequest" {
			t.Fatalf("the host saw %s from the hostile page", next.Raw)
		}
	}
	victim.WaitFor("the victim still connected", `document.getElementById("conn").dataset.state`, "open")
}

// TestBrowserViewDemo: `airlock demo` as a first-time user runs it: the
// printed view URL opens a live page whose every control the demo host
// answers.
func TestBrowserViewDemo(t *testing.T) {
	p := start(t, []string{"demo", "--listen", "127.0.0.1:0"}, procOptions{})
	p.waitListening()
	testkit.Eventually(t, "the demo's instructions", func() bool { return strings.Contains(p.stdout.String(), "Ctrl-C stops the demo") })
	viewURL := regexp.MustCompile(`(http://\S+/local/view#\S+)`).FindStringSubmatch(p.stdout.String())
	if viewURL == nil {
		t.Fatalf("no view URL in the output:\n%s", p.stdout.String())
	}
	b := browsertest.Start(t).First()
	b.Navigate(viewURL[1])
	b.WaitFor("fresh state", `document.getElementById("fresh").dataset.state`, "fresh")
	b.WaitFor("the demo graph", `String(document.querySelectorAll("#nodes button.node").length)`, "9")
	b.WaitFor("a focused node", `String(document.querySelectorAll('#nodes [aria-current="true"]').length)`, "1")
	b.Click("#validate .go")
	b.WaitFor("validate's result", has("#validate .out", "shapes consistent"), "true")
	b.Click("#sourceEdit .go")
	b.WaitFor("the edit accepted", attr("#sourceEdit [data-edit]", "data-edit"), "accepted")
	b.Click("#graphPublish .go")
	b.WaitFor("published", attr("#graphPublish [data-publish]", "data-publish"), "published")
	b.Click("#candidate .go")
	b.WaitFor("candidates", has("#candidate .out", "activation after conv1"), "true")
	b.Click("#captureInspect .go")
	b.WaitFor("a capture", `document.getElementById("captureInspect").dataset.state`, "done")
	b.Click("#export .go")
	b.WaitFor("an export", `document.getElementById("export").dataset.state`, "done")
	b.Screenshot("01-demo")
}
