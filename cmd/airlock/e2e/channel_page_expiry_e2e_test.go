package e2e

import (
	"encoding/json"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestChannelPageClosedAtSessionExpiry: a page executor admitted on the
// view cookie of a session lives no longer than that session (PROTOCOL
// sections 4.7 and 6.1): at expiresAt it is closed 4402
// CREDENTIAL_EXPIRED, its call in flight settles page-closed, and its
// descriptor, still listed, is refused no-page at once: later calls are
// sent to no page, nor to a page that connects afterwards before it
// declares the descriptor itself.
func TestChannelPageClosedAtSessionExpiry(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_LOOPBACK_AUTH=1")
	origin := w.broker.URL()
	pd := wire.Descriptor{DescriptorID: "pg", Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}, Bounds: w.slow}
	pass := chanViewCookieFor(t, w, localclient.MintOptions{LaunchOrigin: origin, TTLSeconds: 2})
	page := w.pageWith(pass)
	page.send(wire.CatalogFrame([]wire.Descriptor{pd}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	inflight := w.callAsync("c1", "pg", w.slow, "echo", `{"secret":"arg"}`)
	page.nextCall() // the page holds a call when the session expires
	page.wantClose(4402, "CREDENTIAL_EXPIRED")
	if got := inflight(); got.Refused != wire.PageClosed {
		t.Errorf("call in flight at expiry: %+v, want %s", got, wire.PageClosed)
	}
	testkit.Eventually(t, "the page peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })
	if got := w.tools()["pg"]; got != "page" {
		t.Errorf("pg listed at %q after expiry, want page", got)
	}
	if got := w.call("c2", "pg", w.slow, "echo", `{"secret":"arg"}`); got.Refused != wire.NoPage || got.Budget != nil {
		t.Errorf("a call after expiry: %+v, want %s", got, wire.NoPage)
	}
	// The same cookie and view key cannot bring a page back.
	again := w.pageWith(pass)
	again.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
	// A page on a live session is not sent pg's calls: the first call it
	// receives is for the descriptor it declares.
	next := w.pageWith(chanViewCookie(t, w, origin))
	testkit.Eventually(t, "a new page to connect", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 1 })
	if got := w.call("c3", "pg", w.slow, "echo", `{"secret":"arg"}`); got.Refused != wire.NoPage {
		t.Errorf("a call with a new page that has not declared pg: %+v, want %s", got, wire.NoPage)
	}
	next.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pg2", w.slow)}))
	testkit.Eventually(t, "pg2 routed to the page", func() bool { return w.tools()["pg2"] == "page" })
	res := w.callAsync("c4", "pg2", w.slow, "echo", `{}`)
	if c := next.answerNext(`{"from":"page"}`); c.DescriptorID != "pg2" {
		t.Fatalf("the new page received a call for %q", c.DescriptorID)
	}
	if got := res(); !got.OK {
		t.Errorf("pg2: %+v", got)
	}
}
