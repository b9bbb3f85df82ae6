package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestChannelPeerWhyCleaned: a page peer refusing with a 1 MiB why that
// opens with ESC and U+202E reaches the caller as the same refusal with a
// why of at most wire.MaxWhyBytes, free of control and bidi characters;
// a short clean why passes unchanged on the same path, and each kind of
// unsafe character is removed from one that holds them all.
func TestChannelPeerWhyCleaned(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 1, MaxOutputBytes: 100, AllowedHosts: []string{}, Roots: []string{}}
	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pwhy", b)}))
	testkit.Eventually(t, "pwhy routed to the page", func() bool { return w.tools()["pwhy"] == "page" })

	refuse := func(id, why string) wire.Answer {
		res := w.callAsync(id, "pwhy", b, "echo", `{}`)
		c := page.nextCall()
		page.send([]byte(`{"v":1,"callId":"` + c.CallID + `","ok":false,"refused":"fetch-failed","why":"` + why + `"}`))
		return res()
	}
	a := refuse("dirty", `\u001b[2J\u202e`+strings.Repeat("W", 1<<20))
	if a.Refused != wire.FetchFailed || len(a.Why) > wire.MaxWhyBytes || strings.ContainsAny(a.Why, "\x1b\u202e") {
		t.Fatalf("dirty why reached the caller: refused %q, %d bytes: %.40q", a.Refused, len(a.Why), a.Why)
	}
	if !strings.HasPrefix(a.Why, "[2JWWW") {
		t.Errorf("cleaned why lost its text: %.40q", a.Why)
	}
	if a := refuse("clean", "host answered 404"); a.Refused != wire.FetchFailed || a.Why != "host answered 404" {
		t.Errorf("clean why changed: %+v", a)
	}
	// Every kind of unsafe character of PROTOCOL section 1.8 is removed,
	// with nothing in its place; everything else is kept.
	const mixed = `a\u0000b\u007fc\u0085d\u202ae\u2069f\u200eg\u200fh\u061ci\u2028j\u2029k\ufffdl \u00e9\u2713\u00a0\u200d`
	if a := refuse("mixed", mixed); a.Refused != wire.FetchFailed || a.Why != "abcdefghijkl \u00e9\u2713\u00a0\u200d" {
		t.Errorf("unsafe characters: %+v", a)
	}
}

// TestChannelPeerUnknownRuleSettlesExecThrew: a paired environment
// refusing under a well-formed rule id this broker does not know settles
// the call at once, exec-threw, with a why that names the peer's rule
// (cleaned of control and bidi characters), not a timeout: the call's
// bound is a minute and the rule proves the answer was taken. It is
// counted as unknown-rule, not malformed. A refusal whose rule is not a
// well-formed id (empty, or holding a control character) is still an
// invalid frame that settles nothing: the same call then takes the next
// valid answer.
func TestChannelPeerUnknownRuleSettlesExecThrew(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("newer")
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 1, MaxOutputBytes: 1024, AllowedHosts: []string{}, Roots: []string{}}
	p := w.dialChannel("/channel", nil)
	p.send(wire.HelloFrame(bearer))
	p.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("newer", b)}))
	testkit.Eventually(t, "newer routed to machine:newer", func() bool { return w.tools()["newer"] == "machine:newer" })

	res := w.callAsync("quota", "newer", b, "echo", `{}`)
	c := p.nextCall()
	p.send([]byte(`{"v":1,"callId":"` + c.CallID + `","ok":false,"refused":"quota-exceeded","why":"\u202eover quota\u001b[2J","budget":{"requestsUsed":0,"requestsLimit":0}}`))
	a := res()
	if a.Refused != wire.ExecThrew || !strings.Contains(a.Why, "quota-exceeded") || !strings.Contains(a.Why, "over quota[2J") {
		t.Fatalf("an unknown peer rule reached the caller as %s %q", a.Refused, a.Why)
	}
	if strings.ContainsAny(a.Why, "\x1b\u202e") || len(a.Why) > wire.MaxWhyBytes || strings.HasPrefix(a.Why, wire.ToolErrorPrefix) {
		t.Errorf("the why is not cleaned, bounded and the broker's own: %q", a.Why)
	}
	if a.Budget == nil || *a.Budget != (wire.Budget{}) {
		t.Errorf("the peer's budget was lost: %+v", a.Budget)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="unknown-rule"`); n != 1 {
		t.Errorf("unknown-rule counted %v times, want 1", n)
	}

	res = w.callAsync("bad-rules", "newer", b, "echo", `{}`)
	c = p.nextCall()
	for _, rule := range []string{`""`, `"quota\u0007exceeded"`, `7`} {
		p.send([]byte(`{"v":1,"callId":"` + c.CallID + `","ok":false,"refused":` + rule + `,"why":"x"}`))
	}
	testkit.Eventually(t, "three ill-formed rules rejected as malformed", func() bool {
		return w.metric("airlock_channel_frames_rejected_total", `reason="malformed"`) == 3
	})
	p.send(wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{"after":true}`), nil)))
	if a := res(); !a.OK || string(a.Observed) != `{"after":true}` {
		t.Errorf("an ill-formed rule settled the call: %+v", a)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="unknown-rule"`); n != 1 {
		t.Errorf("unknown-rule counted %v times after the ill-formed ones, want 1", n)
	}
}
