package channel_test

import (
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/executors/wire"
)

// TestPageExecutor covers the page's life over a real WebSocket with a
// loopback Origin: offline refusal, replacement by a newer page (the old
// one closed 1000 page-replaced, its calls page-closed), page-closed when
// the page leaves, and no-page afterwards.
func TestPageExecutor(t *testing.T) {
	w := newWorld(t, nil)
	wantRule(t, w.call("c0", "pg", "t", `{}`), wire.UnattributedCall) // never advertised

	a := w.page().catalog(desc("pg", 60000))
	waitFor(t, "the page's catalog", func() bool { return w.routed("pg", "page") })
	if w.peers("page") != 1 {
		t.Errorf("peers{page} = %v", w.peers("page"))
	}
	inflight := w.callAsync("c1", "pg")
	sent := a.next()
	if sent.CallID == "c1" || sent.DescriptorID != "pg" {
		t.Errorf("call on the channel: %+v", sent)
	}
	waitFor(t, "inflight{page} 1", func() bool { return w.inflight("page") == 1 })

	b := w.page().answering(echo("b"))
	a.wantClosed(websocket.StatusNormalClosure, channel.ReasonPageReplaced)
	answer := <-inflight
	wantRule(t, answer, wire.PageClosed)
	if answer.CallID != "c1" {
		t.Errorf("callId %q", answer.CallID)
	}
	// The remembered catalog routes to the newer page before it sends its own.
	wantObserved(t, w.call("c2", "pg", "t", `{}`), `{"who":"b"}`)

	b.answering(nil)
	inflight = w.callAsync("c3", "pg")
	b.next()
	b.leave()
	wantRule(t, <-inflight, wire.PageClosed)
	waitFor(t, "the page to be detached", func() bool { return w.peers("page") == 0 })
	wantRule(t, w.call("c4", "pg", "t", `{}`), wire.NoPage)
	if w.inflight("page") != 0 || w.ch.Stats().Pending != 0 {
		t.Errorf("left pending: gauge %v, %+v", w.inflight("page"), w.ch.Stats())
	}
	if n := w.rejected("unknown-call"); n != 0 {
		t.Errorf("unknown-call %v", n)
	}
}

// TestPageOfflineBeforeAnyPage: a page's descriptors are remembered only
// in memory, so a fresh broker knows none.
func TestPageRememberedInMemoryOnly(t *testing.T) {
	w := newWorld(t, nil)
	w.page().catalog(desc("pg", 60000)).leave()
	waitFor(t, "the page to be detached", func() bool { return w.peers("page") == 0 && w.routed("pg", "page") })
	wantRule(t, w.call("c", "pg", "t", `{}`), wire.NoPage)
	w.restart()
	wantRule(t, w.call("c", "pg", "t", `{}`), wire.UnattributedCall)
}

// TestPageCookieRule: with channel.loopback_auth a page needs a live view
// cookie as well as the loopback Origin.
func TestPageCookieRule(t *testing.T) {
	valid := func(r *http.Request) bool {
		c, err := r.Cookie("tensorviz_local_browser_0123456789abcdef")
		return err == nil && c.Value == "live"
	}
	w := newWorld(t, func(o *channel.Options) {
		o.Config.LoopbackAuth = true
		o.ViewCookieValid = valid
	})
	for _, cookie := range []string{"", "tensorviz_local_browser_0123456789abcdef=dead", "other=live"} {
		var p *peer
		if cookie == "" {
			p = w.page()
		} else {
			p = w.page("Cookie", cookie)
		}
		p.catalog(desc("pg", 60000))
		p.wantClosed(websocket.StatusPolicyViolation, channel.ReasonUnauthenticated)
	}
	if w.refusals(channel.ReasonUnauthenticated) != 3 || w.routed("pg", "page") {
		t.Fatalf("refusals %v, routed %v", w.refusals(channel.ReasonUnauthenticated), w.routed("pg", "page"))
	}
	w.page("Cookie", "tensorviz_local_browser_0123456789abcdef=live").catalog(desc("pg", 60000)).answering(echo("page"))
	waitFor(t, "the page's catalog", func() bool { return w.routed("pg", "page") })
	wantObserved(t, w.call("c", "pg", "t", `{}`), `{"who":"page"}`)
}

// TestPageWithoutCookieCheckWhenRequired: loopback_auth with no way to
// check cookies refuses every page rather than admitting them.
func TestPageRefusedWhenCookieCannotBeChecked(t *testing.T) {
	w := newWorld(t, func(o *channel.Options) { o.Config.LoopbackAuth = true })
	w.page("Cookie", "anything=1").wantClosed(websocket.StatusPolicyViolation, channel.ReasonUnauthenticated)
}
