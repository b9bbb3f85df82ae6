package main

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
// CREDENTIAL_EXPIRED, its call in flight settles page-closed, its
// descriptor is no longer listed, and later calls are not routed to it.
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
	testkit.Eventually(t, "pg to be unlisted", func() bool { _, listed := w.tools()["pg"]; return !listed })
	if got := w.call("c2", "pg", w.slow, "echo", `{}`); got.Refused != wire.UnattributedCall {
		t.Errorf("a call after expiry: %+v, want %s", got, wire.UnattributedCall)
	}
	if n := w.metric("airlock_channel_peers", `peer="page"`); n != 0 {
		t.Errorf("page peers %v after expiry, want 0", n)
	}
	// The same cookie and view key cannot bring a page back.
	again := w.pageWith(pass)
	again.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
}
