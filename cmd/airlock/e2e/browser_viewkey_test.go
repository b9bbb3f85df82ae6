package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// Cookies are scoped by host, not by port, and SameSite ignores ports: a
// page another local process serves on another loopback port gets the
// broker's view cookie sent to its own server. The view key that
// bootstrap returns, kept in the page's sessionStorage (per origin, port
// included), is what such a process cannot have (PROTOCOL section 3).

// cookieTrap is the page of the other process: it fetches its own
// /local/x with credentials, so its server sees the browser's cookies.
const cookieTrap = `<!doctype html><p id="done">sending</p><script>
fetch("/local/x", {credentials: "include"}).then(
  () => { document.getElementById("done").textContent = "sent"; },
  (e) => { document.getElementById("done").textContent = "failed " + e; });
</script>`

// trapCookies serves cookieTrap on a loopback port of its own and hands
// over the Cookie header of each /local/x it is sent.
func trapCookies(t *testing.T) (*httptest.Server, <-chan string) {
	t.Helper()
	got := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/local/x" {
			select {
			case got <- r.Header.Get("Cookie"):
			default:
			}
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, cookieTrap)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// stolenViewCookie opens the trap in a new tab of br and returns the
// broker's view cookie of m as the trap's server received it.
func stolenViewCookie(t *testing.T, p *proc, br *browsertest.Browser, m *localclient.Minted) *http.Cookie {
	t.Helper()
	trap, got := trapCookies(t)
	if trap.URL == p.URL() {
		t.Fatal("the trap must be on another port")
	}
	tab := br.NewTab()
	tab.Navigate(trap.URL)
	tab.WaitFor("the trap's fetch", text("#done"), "sent")
	var header string
	select {
	case header = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("the trap's server received no request")
	}
	name := contract.ViewCookieName(m.LaunchOrigin)
	for _, c := range (&http.Request{Header: http.Header{"Cookie": {header}}}).Cookies() {
		if c.Name == name {
			p.AddSecret(c.Value)
			return c
		}
	}
	t.Fatalf("the browser sent the trap no %s (got %d bytes of cookies): the attack needs it", name, len(header))
	return nil
}

// TestViewCookieFromAnotherPortOpensNothing: a view bootstraps in
// Chromium and serves tools; the same browser then loads a page of another
// process on another loopback port, whose server receives the view cookie.
// Replayed with a forged Origin, that cookie joins no session on /local/ws
// (4401, the host never hears of it) and does not become the page executor
// on /local/channel (1008 executor-unauthenticated, the serving page is
// not replaced, a caller's args never reach it).
func TestViewCookieFromAnotherPortOpensNothing(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	victim := br.First()
	m, host := openView(t, p, victim, p.URL())
	victim.WaitFor("the tools panel", `document.getElementById("tools").dataset.ready`, "true")
	victim.Click("#serve")
	victim.WaitFor("serving", servingState, "serving")
	testkit.Eventually(t, "page-notes to be listed", func() bool { return pageTools(t, p)["page-notes"].Executor == "page" })

	stolen := stolenViewCookie(t, p, br, m)

	// /local/ws: the cookie and the launch origin, as the victim sends them.
	s := p.dial(t, "replayed view", localclient.DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID,
		Cookies: []*http.Cookie{stolen}})
	// The hello may fail to go out (the socket is closing); what comes
	// back must be the close, never connected.
	_ = s.SendRaw(tctx(t), s.Envelope("hello", map[string]any{}, 0))
	s.closed(4401, "INVALID_CREDENTIALS")
	// The host heard of no other view: the victim's next action reaches
	// it first (the victim's own second snapshot ask may come before).
	victim.Click(`#nodes button[data-node="conv1"]`)
	for next := host.next(); next.Type != "revealNode"; next = host.next() {
		if next.Type != "snapshotRequest" {
			t.Errorf("the host saw %s after the replay", next.Raw)
		}
	}

	// /local/channel: the cookie, the broker's own Origin, page-notes.
	replay := dialReplayedPage(t, p, stolen)
	desc := pageTools(t, p)["page-notes"]
	desc.Executor = ""
	replay.send(wire.CatalogFrame([]wire.Descriptor{desc}))
	testkit.Eventually(t, "the replayed page to be closed, or to replace the serving page", func() bool {
		return replay.isClosed() || victim.Eval(servingState) == "replaced"
	})
	if victim.Eval(servingState) == "replaced" {
		code, out := callPage(t, p, "search_notes", `{"query":"the caller's words"}`)
		t.Fatalf("the replayed cookie became the page executor: the serving page was replaced; a call (exit %d %s) went to the replaying process: %s",
			code, out, replay.received())
	}
	if code, reason := replay.closeStatus(); code != websocket.StatusPolicyViolation || reason != "executor-unauthenticated" {
		t.Errorf("the replayed page closed %d %q, want 1008 executor-unauthenticated", code, reason)
	}
	if code, out := callPage(t, p, "search_notes", `{"query":"the caller's words"}`); code != 0 || !strings.Contains(out, `"matches"`) {
		t.Errorf("a call to page-notes after the replay: exit %d %s, want the serving page's answer", code, out)
	}
	if got := replay.received(); got != "" {
		t.Errorf("the replaying process received %s", got)
	}
	victim.WaitFor("the victim still serving", servingState, "serving")
	victim.WaitFor("the victim still connected", `document.getElementById("conn").dataset.state`, "open")
	if strings.Contains(p.Stderr(), "local.view_key is off") {
		t.Error("the view-key warning was logged with the check on")
	}
}

// replayedPage is a /local/channel connection of the replaying process;
// a goroutine reads it to its close.
type replayedPage struct {
	conn   *websocket.Conn
	frames chan string
	closed chan struct{}
	err    error
}

func dialReplayedPage(t *testing.T, p *proc, cookie *http.Cookie) *replayedPage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := http.Header{"Origin": {p.URL()}, "Cookie": {cookie.Name + "=" + cookie.Value}}
	conn, _, err := websocket.Dial(ctx, "ws://"+p.Addr+"/local/channel", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial /local/channel: %v", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	r := &replayedPage{conn: conn, frames: make(chan string, 64), closed: make(chan struct{})}
	go func() {
		defer close(r.closed)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				r.err = err
				return
			}
			select {
			case r.frames <- string(data):
			default:
			}
		}
	}()
	return r
}

func (r *replayedPage) send(frame []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = r.conn.Write(ctx, websocket.MessageText, frame)
}

func (r *replayedPage) isClosed() bool {
	select {
	case <-r.closed:
		return true
	default:
		return false
	}
}

// closeStatus is the close the broker sent (-1 when it was no close).
func (r *replayedPage) closeStatus() (websocket.StatusCode, string) {
	<-r.closed
	var ce websocket.CloseError
	if asCloseError(r.err, &ce) {
		return ce.Code, ce.Reason
	}
	return -1, ""
}

// received is every frame the replaying process has read so far.
func (r *replayedPage) received() string {
	var out []string
	for {
		select {
		case f := <-r.frames:
			out = append(out, f)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// TestBrowserViewKeyKeepsThePageWorking: the legitimate page holds its
// view key in sessionStorage, never in a cookie or the address, and with
// it connects, serves a call as the page executor, and does both again
// after a reload.
func TestBrowserViewKeyKeepsThePageWorking(t *testing.T) {
	p := startSessions(t)
	b := browsertest.Start(t).First()
	_, host := openView(t, p, b, p.URL())
	key := b.Eval(`JSON.parse(sessionStorage.getItem("airlock.session")).viewKey`)
	p.AddSecret(key)
	if len(key) != 43 {
		t.Fatalf("the page keeps no view key in sessionStorage (%d characters)", len(key))
	}
	if got := b.Eval(`String(document.cookie.includes(` + jsString(key) + `) || location.href.includes(` + jsString(key) + `) || localStorage.length > 0)`); got != "false" {
		t.Error("the view key is in a cookie, the address or localStorage")
	}
	serveOnce := func(when string) {
		t.Helper()
		b.WaitFor("the tools panel "+when, `document.getElementById("tools").dataset.ready`, "true")
		b.Click("#serve")
		b.WaitFor("serving "+when, servingState, "serving")
		testkit.Eventually(t, "page-notes to be listed "+when, func() bool { return pageTools(t, p)["page-notes"].Executor == "page" })
		if code, out := callPage(t, p, "list_notes", `{}`); code != 0 || !strings.Contains(out, `"notes"`) {
			t.Errorf("list_notes %s: exit %d %s", when, code, out)
		}
	}
	serveOnce("after bootstrap")

	b.Do(chromedp.Reload())
	for {
		if vs := payload(host.until("viewState")); vs["state"] == "connected" {
			break
		}
	}
	b.WaitFor("connected after a reload", `document.getElementById("conn").dataset.state`, "open")
	serveOnce("after a reload")
}

// TestViewKeyOffAdmitsTheCookieAlone: AIRLOCK_LOCAL_VIEW_KEY=0 restores
// the seed's rule for pages written against it: the cookie alone opens
// the view and the page executor, a key offered must still be right, and
// start-up warns.
func TestViewKeyOffAdmitsTheCookieAlone(t *testing.T) {
	p := startSessions(t, "AIRLOCK_LOCAL_VIEW_KEY=0")
	warned := false
	for _, line := range scanLines(p.Stderr()) {
		warned = warned || (strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, "local.view_key is off"))
	}
	if !warned {
		t.Error("no start-up warning that the view key is off")
	}
	m := p.mintFor(t, localclient.MintOptions{})
	pass := p.bootstrap(t, m)
	host, _ := p.host(t, m)
	v := p.dial(t, "seed view", localclient.DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID, Cookies: []*http.Cookie{pass.Cookie}})
	if c, err := v.Hello(tctx(t)); err != nil || c.Role != "view" {
		t.Fatalf("a view on its cookie alone: %+v %v", c, err)
	}
	host.expect("viewState")
	wrong := p.dial(t, "wrong key", localclient.DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID,
		Cookies: []*http.Cookie{pass.Cookie}, ViewKey: "bm90LXRoZS12aWV3LWtleQ"})
	_ = wrong.SendRaw(tctx(t), wrong.Envelope("hello", map[string]any{}, 0)) // may fail: the socket is closing
	wrong.closed(4401, "INVALID_CREDENTIALS")
	page := dialReplayedPage(t, p, pass.Cookie)
	page.send(wire.CatalogFrame([]wire.Descriptor{{DescriptorID: "seed-page", Tools: pageTool, Bounds: wire.Bounds{TimeoutMs: 5000,
		MemoryMiB: 16, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}}}))
	testkit.Eventually(t, "the seed page to serve", func() bool { return pageTools(t, p)["seed-page"].Executor == "page" })
}
