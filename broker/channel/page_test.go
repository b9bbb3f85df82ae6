package channel_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestPageExecutor covers the page's life over a real WebSocket with a
// loopback Origin: replacement by a newer page (the old one closed 1000
// page-replaced, its calls page-closed), which is sent no call for the
// old page's catalog until it sends its own, page-closed when the page
// leaves, and no-page for its descriptors afterwards.
func TestPageExecutor(t *testing.T) {
	w := newWorld(t, nil)
	wantRule(t, w.call("c0", "pg", "t", `{}`), wire.UnattributedCall) // never advertised

	a := w.page().catalog(desc("pg", 60000))
	testkit.Eventually(t, "the page's catalog", func() bool { return w.routed("pg", "page") })
	if w.peers("page") != 1 {
		t.Errorf("peers{page} = %v", w.peers("page"))
	}
	inflight := w.callAsync("c1", "pg")
	sent := a.next()
	if sent.CallID == "c1" || sent.DescriptorID != "pg" {
		t.Errorf("call on the channel: %+v", sent)
	}
	testkit.Eventually(t, "inflight{page} 1", func() bool { return w.inflight("page") == 1 })

	b := w.page().answering(echo("b"))
	a.wantClosed(websocket.StatusNormalClosure, link.ReasonPageReplaced)
	answer := <-inflight
	wantRule(t, answer, wire.PageClosed)
	if answer.CallID != "c1" {
		t.Errorf("callId %q", answer.CallID)
	}
	// The replaced page's catalog is remembered, but it is not the newer
	// page's: until that one sends its own, its calls are refused no-page
	// (b would answer one it received).
	if !w.routed("pg", "page") {
		t.Error("the replaced page's catalog was forgotten")
	}
	wantRule(t, w.call("c1b", "pg", "t", `{}`), wire.NoPage)
	b.catalog(desc("pg", 60000), desc("pb", 60000))
	testkit.Eventually(t, "the newer page's catalog", func() bool { return w.routed("pb", "page") })
	wantObserved(t, w.call("c2", "pg", "t", `{}`), `{"who":"b"}`)

	b.answering(nil)
	inflight = w.callAsync("c3", "pg")
	b.next()
	b.leave()
	wantRule(t, <-inflight, wire.PageClosed)
	testkit.Eventually(t, "the page to be detached", func() bool { return w.peers("page") == 0 })
	wantRule(t, w.call("c4", "pg", "t", `{}`), wire.NoPage)
	if w.inflight("page") != 0 || w.ch.Stats().Pending != 0 {
		t.Errorf("left pending: gauge %v, %+v", w.inflight("page"), w.ch.Stats())
	}
	if n := w.rejected("unknown-call"); n != 0 {
		t.Errorf("unknown-call %v", n)
	}
}

// TestPageCatalogRememberedUntilReplaced: the last page's catalog outlives
// its connection: its descriptors stay listed and are refused no-page,
// sending nothing, until another page's catalog replaces the set whole;
// a pairing that announces one of them takes it, and a restart forgets
// them.
func TestPageCatalogRememberedUntilReplaced(t *testing.T) {
	w := newWorld(t, nil)
	w.page().catalog(desc("pg", 60000)).answering(echo("page"))
	testkit.Eventually(t, "the page's catalog", func() bool { return w.routed("pg", "page") })
	wantObserved(t, w.call("c", "pg", "t", `{}`), `{"who":"page"}`)
	// A newer page declares another catalog and leaves: it replaces pg.
	w.page().catalog(desc("other", 60000), desc("lab", 60000)).leave()
	testkit.Eventually(t, "the page to be detached", func() bool { return w.peers("page") == 0 && w.routed("other", "page") })
	if _, ok := w.ch.Lookup("pg"); ok {
		t.Error("an entry the newer page's catalog omits is still routed")
	}
	wantRule(t, w.call("c", "pg", "t", `{}`), wire.UnattributedCall)
	wantRule(t, w.call("c", "other", "t", `{}`), wire.NoPage)
	// A pairing outranks the remembered page entry.
	w.env(w.pair("lab")).catalog(desc("lab", 60000)).answering(echo("lab"))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("lab", "machine:lab") })
	wantObserved(t, w.call("c", "lab", "t", `{}`), `{"who":"lab"}`)
	// The page's memory is the broker's, not the data folder's.
	w.restart()
	if _, ok := w.ch.Lookup("other"); ok {
		t.Error("the page's catalog survived a restart")
	}
	wantRule(t, w.call("c", "other", "t", `{}`), wire.UnattributedCall)
}

// TestPageCannotClaimHeldDescriptors: page catalog entries for a local
// descriptor, a connected pairing's and a pairing's remembered after it
// left are dropped, logged and counted; the rest of the catalog stands,
// and calls for the held ids never reach the page.
func TestPageCannotClaimHeldDescriptors(t *testing.T) {
	w := newWorld(t, nil, localSource{desc("loc", 1000)})
	w.env(w.pair("lab")).catalog(desc("m", 60000)).answering(echo("lab"))
	w.env(w.pair("old")).catalog(desc("r", 60000)).leave()
	testkit.Eventually(t, "the catalogs", func() bool {
		return w.routed("m", "machine:lab") && w.routed("r", "machine:old") && w.peers("machine") == 1
	})
	page := w.page().catalog(desc("loc", 1000), desc("m", 60000), desc("r", 60000), desc("p", 60000))
	testkit.Eventually(t, "the page's catalog", func() bool { return w.routed("p", "page") })
	if !w.routed("m", "machine:lab") || !w.routed("r", "machine:old") {
		t.Fatal("a page took over a pairing's descriptor")
	}
	if rt, ok := w.ch.Lookup("loc"); ok {
		t.Errorf("loc routed on the channel to %s", rt.Executor)
	}
	wantObserved(t, w.call("c", "loc", "t", `{}`), `{"who":"local"}`)
	wantObserved(t, w.call("c", "m", "t", `{}`), `{"who":"lab"}`)
	wantRule(t, w.call("c", "r", "t", `{}`), wire.MachineUnreachable)
	// The page's first call is the one for its own descriptor.
	got := w.callAsync("c", "p")
	c := page.next()
	if c.DescriptorID != "p" {
		t.Fatalf("the page received a call for %q", c.DescriptorID)
	}
	page.send(wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{}`), nil)))
	if a := <-got; !a.OK {
		t.Errorf("p: %+v", a)
	}
	if n := w.rejected("descriptor-held"); n != 3 {
		t.Errorf("descriptor-held %v, want 3", n)
	}
	if n := strings.Count(w.logs.String(), "page catalog entry dropped"); n != 3 {
		t.Errorf("%d drops logged, want 3", n)
	}
}

// TestPageCookieRule: with channel.loopback_auth a page needs a live view
// cookie as well as the loopback Origin.
func TestPageCookieRule(t *testing.T) {
	valid := func(r *http.Request) (<-chan struct{}, bool) {
		c, err := r.Cookie("tensorviz_local_browser_0123456789abcdef")
		return nil, err == nil && c.Value == "live"
	}
	w := newWorld(t, func(o *channel.Options) {
		o.Config.LoopbackAuth = true
		o.ViewSession = valid
	})
	for _, cookie := range []string{"", "tensorviz_local_browser_0123456789abcdef=dead", "other=live"} {
		var p *peer
		if cookie == "" {
			p = w.page()
		} else {
			p = w.page("Cookie", cookie)
		}
		p.catalog(desc("pg", 60000))
		p.wantClosed(websocket.StatusPolicyViolation, link.ReasonUnauthenticated)
	}
	if w.refusals(link.ReasonUnauthenticated) != 3 || w.routed("pg", "page") {
		t.Fatalf("refusals %v, routed %v", w.refusals(link.ReasonUnauthenticated), w.routed("pg", "page"))
	}
	w.page("Cookie", "tensorviz_local_browser_0123456789abcdef=live").catalog(desc("pg", 60000)).answering(echo("page"))
	testkit.Eventually(t, "the page's catalog", func() bool { return w.routed("pg", "page") })
	wantObserved(t, w.call("c", "pg", "t", `{}`), `{"who":"page"}`)
}

// TestPageWithoutCookieCheckWhenRequired: loopback_auth with no way to
// check cookies refuses every page rather than admitting them.
func TestPageRefusedWhenCookieCannotBeChecked(t *testing.T) {
	w := newWorld(t, func(o *channel.Options) { o.Config.LoopbackAuth = true })
	w.page("Cookie", "anything=1").wantClosed(websocket.StatusPolicyViolation, link.ReasonUnauthenticated)
}

// TestLoopbackAuthOffIsWarned: running without the page cookie check is
// a warning at start-up; with it, nothing is said.
func TestLoopbackAuthOffIsWarned(t *testing.T) {
	warned := func(w *world) bool {
		for _, line := range strings.Split(w.logs.String(), "\n") {
			if strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, channel.LoopbackAuthOffWarning) {
				return true
			}
		}
		return false
	}
	if !warned(newWorld(t, nil)) {
		t.Error("loopback_auth off: no warning")
	}
	if warned(newWorld(t, func(o *channel.Options) { o.Config.LoopbackAuth = true })) {
		t.Error("loopback_auth on: warned")
	}
}
