package channel

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/executors/wire"
)

// TestRemoteCleansPeerWhy: a peer's refusal reaches the caller with its why
// cut to wire.MaxWhyBytes and stripped of control and bidi characters,
// rule and budget kept.
func TestRemoteCleansPeerWhy(t *testing.T) {
	d, l, _ := testRemote(t, Page, 0)
	out := ask(d, call("c", "x"), time.Hour)
	sent := l.next(t)
	why := `\u001b[2J\u202e` + strings.Repeat("W", 1<<20)
	frame := fmt.Sprintf(`{"v":1,"callId":%q,"ok":false,"refused":"fetch-failed","why":"%s","budget":{"requestsUsed":1,"requestsLimit":3}}`, sent.CallID, why)
	if err := d.Answer([]byte(frame)); err != nil {
		t.Fatal(err)
	}
	a := <-out
	wantRule(t, a, wire.FetchFailed)
	if a.Why != "[2J"+strings.Repeat("W", wire.MaxWhyBytes-3) {
		t.Errorf("why reached the caller as %d bytes: %.40q", len(a.Why), a.Why)
	}
	if a.Budget == nil || *a.Budget != (wire.Budget{RequestsUsed: 1, RequestsLimit: 3}) || a.CallID != "c" {
		t.Errorf("refusal changed beyond its why: %+v", a.Budget)
	}
}

// TestRemotePassesPeerToolError: a tool error from a paired environment
// (already cleaned and cut there) reaches the caller unchanged, its
// message cut to wire.MaxWhyBytes after the prefix as a local one is;
// one that was not cleaned is cleaned the same way.
func TestRemotePassesPeerToolError(t *testing.T) {
	d, l, _ := testRemote(t, Machine, 0)
	for i, c := range []struct{ sent, want string }{
		{wire.ToolErrorWhy(strings.Repeat("é", wire.MaxWhyBytes)), "tool error: " + strings.Repeat("é", wire.MaxWhyBytes/2)},
		{`tool error: no note \"x.md\"`, `tool error: no note "x.md"`},
		{`tool error: a\u001b[2J\u202eb\u200fc`, "tool error: a[2Jbc"},
	} {
		out := ask(d, call(fmt.Sprintf("c%d", i), "x"), time.Hour)
		sent := l.next(t)
		frame := fmt.Sprintf(`{"v":1,"callId":%q,"ok":false,"refused":"exec-threw","why":"%s","budget":{"requestsUsed":0,"requestsLimit":3}}`, sent.CallID, c.sent)
		if err := d.Answer([]byte(frame)); err != nil {
			t.Fatal(err)
		}
		if a := <-out; a.Refused != wire.ExecThrew || a.Why != c.want {
			t.Errorf("peer tool error reached the caller as %s %.60q", a.Refused, a.Why)
		}
	}
}

// TestRemoteSettlesUnknownPeerRule: a refusal under a rule id outside the
// vocabulary settles its call exec-threw at once, naming the rule, and is
// counted unknown-rule; the same answer for a call nobody waits for is
// unknown-call only.
func TestRemoteSettlesUnknownPeerRule(t *testing.T) {
	d, l, reg := testRemote(t, Machine, 0)
	out := ask(d, call("c", "x"), time.Hour)
	sent := l.next(t)
	frame := fmt.Sprintf(`{"v":1,"callId":%q,"ok":false,"refused":"quota-exceeded","why":"later","budget":{"requestsUsed":0,"requestsLimit":3}}`, sent.CallID)
	if err := d.Answer([]byte(frame)); err != nil {
		t.Fatal(err)
	}
	a := <-out
	wantRule(t, a, wire.ExecThrew)
	if a.Why != wire.ForeignWhy("quota-exceeded", "later") || a.CallID != "c" || a.Budget == nil {
		t.Errorf("settled as %+v", a)
	}
	if err := d.Answer([]byte(frame)); !errors.Is(err, ErrUnknownCall) {
		t.Errorf("a second answer: %v", err)
	}
	for reason, want := range map[string]float64{reasonUnknownRule: 1, reasonUnknownCall: 1, "malformed": 0} {
		if v := testutil.ToFloat64(reg.ChannelFramesRejected.WithLabelValues(reason)); v != want {
			t.Errorf("frames %s = %v, want %v", reason, v, want)
		}
	}
}
