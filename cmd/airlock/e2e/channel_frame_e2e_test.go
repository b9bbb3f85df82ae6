package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestChannelPeerFrameBound: PROTOCOL section 6.7. A frame from an
// authenticated peer one byte over 65 MiB is discarded unread, even one
// that would answer a waiting call, and counted malformed; the
// connection stays open, and a frame of exactly 65 MiB is read and
// settles the call (output-too-large: its observed is over the bounds).
func TestChannelPeerFrameBound(t *testing.T) {
	t.Parallel()
	const bound = 65 << 20
	w := newChanWorld(t)
	b := wire.Bounds{TimeoutMs: 300000, MemoryMiB: 1, MaxOutputBytes: 100, AllowedHosts: []string{}, Roots: []string{}}
	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pbig", b)}))
	testkit.Eventually(t, "pbig routed to the page", func() bool { return w.tools()["pbig"] == "page" })

	// frame pads head + tail to exactly n bytes.
	frame := func(n int, head, tail string) []byte {
		return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
	}
	res := w.callAsync("big", "pbig", b, "echo", `{}`)
	c := page.nextCall()
	page.sendLarge(frame(bound+1, fmt.Sprintf(`{"v":1,"callId":%q,"ok":false,"refused":"fetch-failed","why":"`, c.CallID), `"}`))
	page.sendLarge(frame(bound, fmt.Sprintf(`{"v":1,"callId":%q,"ok":true,"observed":{"pad":"`, c.CallID), `"}}`))
	if a := res(); a.Refused != wire.OutputTooLarge {
		t.Fatalf("answers over and at the bound: %s %.80q, want output-too-large from the one at the bound", a.Refused, a.Why)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="malformed"`); n != 1 {
		t.Errorf("frames rejected malformed: %v, want 1", n)
	}
	// The same connection goes on serving calls.
	res = w.callAsync("small", "pbig", b, "echo", `{}`)
	page.answerNext(`{"fine":true}`)
	if a := res(); !a.OK {
		t.Errorf("a call after the oversized frame: %+v", a)
	}
}
