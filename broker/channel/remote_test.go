package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// memLink is an in-memory peer connection: frames the remote sends land in
// sent, in order; the test plays the peer.
type memLink struct {
	up      atomic.Bool
	failing atomic.Bool
	busy    atomic.Bool // the turn to write never comes
	sent    chan []byte
	mu      sync.Mutex
	ids     []string // every broker id the remote tried to send
}

func newLink() *memLink {
	l := &memLink{sent: make(chan []byte, 1<<16)}
	l.up.Store(true)
	return l
}

func (l *memLink) Connected() bool { return l.up.Load() }

func (l *memLink) Take(stop <-chan struct{}, expired <-chan time.Time) bool {
	if !l.busy.Load() {
		return true
	}
	select {
	case <-stop:
	case <-expired:
	}
	return false
}

func (l *memLink) Send(frame []byte, _ time.Time) error {
	c, err := wire.ParseCall(frame)
	if err != nil {
		panic("the remote sent an invalid call: " + err.Error())
	}
	l.mu.Lock()
	l.ids = append(l.ids, c.CallID)
	l.mu.Unlock()
	if l.failing.Load() || !l.up.Load() {
		return errors.New("memLink: down")
	}
	l.sent <- bytes.Clone(frame) // Send must not keep frame
	return nil
}

// next is the next call the remote sent.
func (l *memLink) next(t testing.TB) wire.Call {
	t.Helper()
	select {
	case f := <-l.sent:
		c, err := wire.ParseCall(f)
		if err != nil {
			t.Fatalf("sent frame is not a call: %v", err)
		}
		return c
	case <-time.After(60 * time.Second):
		t.Fatal("the remote sent nothing")
	}
	return wire.Call{}
}

func testRemote(t testing.TB, kind Kind, max int) (*Remote, *memLink, *metrics.Registry) {
	reg := metrics.New()
	l := newLink()
	return NewRemote(kind, l, RemoteOptions{MaxInflight: max, Metrics: reg}), l, reg
}

func call(id, marker string) wire.Call {
	return wire.Call{V: 1, CallID: id, Tool: "echo", DescriptorID: "fx",
		Args: json.RawMessage(`{"m":"` + marker + `"}`), BoundsEcho: json.RawMessage(`{}`)}
}

// ask runs Ask on its own goroutine; the answer arrives on the channel.
func ask(d *Remote, c wire.Call, timeout time.Duration) <-chan wire.Answer {
	out := make(chan wire.Answer, 1)
	go func() { out <- d.Ask(context.Background(), c, testBounds, timeout) }()
	return out
}

// testBounds are the bounds of the calls these tests ask: okFrame's
// budget agrees with them.
var testBounds = wire.Bounds{TimeoutMs: 1000, MemoryMiB: 1, MaxOutputBytes: 1024, MaxRequests: 3}

func okFrame(id string, observed string) []byte {
	return []byte(fmt.Sprintf(`{"v":1,"callId":%q,"ok":true,"observed":%s,"budget":{"requestsUsed":1,"requestsLimit":3}}`, id, observed))
}

func wantRule(t testing.TB, a wire.Answer, r wire.Rule) {
	t.Helper()
	if a.OK || a.Refused != r {
		data, _ := json.Marshal(a)
		t.Fatalf("want %s, got %s", r, data)
	}
}

func TestRemoteOfflineRefusesAtOnceSendingNothing(t *testing.T) {
	for kind, rule := range map[Kind]wire.Rule{Page: wire.NoPage, Machine: wire.MachineUnreachable} {
		d, l, _ := testRemote(t, kind, 0)
		l.up.Store(false)
		a := d.Ask(context.Background(), call("c1", "x"), testBounds, time.Hour)
		wantRule(t, a, rule)
		if a.CallID != "c1" || len(l.ids) != 0 || d.Pending() != 0 {
			t.Errorf("%s: callId %q, %d frames sent, %d pending", kind, a.CallID, len(l.ids), d.Pending())
		}
	}
}

func TestRemoteAnswerSettlesWithTheCallersID(t *testing.T) {
	d, l, reg := testRemote(t, Machine, 0)
	out := ask(d, call("same-id", "x"), time.Hour)
	sent := l.next(t)
	if !strings.HasPrefix(sent.CallID, "b_") || sent.CallID == "same-id" {
		t.Fatalf("callId not rewritten on the channel hop: %q", sent.CallID)
	}
	if string(sent.Args) != `{"m":"x"}` || sent.Tool != "echo" || sent.DescriptorID != "fx" {
		t.Errorf("call changed on the way: %+v", sent)
	}
	if v := testutil.ToFloat64(reg.ChannelInflight.WithLabelValues("machine")); v != 1 {
		t.Errorf("inflight gauge %v, want 1", v)
	}
	if err := d.Answer(okFrame(sent.CallID, `{"m":"x"}`)); err != nil {
		t.Fatal(err)
	}
	a := <-out
	if !a.OK || a.CallID != "same-id" || string(a.Observed) != `{"m":"x"}` || a.Budget == nil || *a.Budget != (wire.Budget{RequestsUsed: 1, RequestsLimit: 3}) {
		t.Fatalf("answer %+v", a)
	}
	if v := testutil.ToFloat64(reg.ChannelInflight.WithLabelValues("machine")); v != 0 || d.Pending() != 0 {
		t.Errorf("inflight gauge %v, pending %d after the answer", v, d.Pending())
	}
}

func TestRemoteRuntimeRefusalsPassUnchanged(t *testing.T) {
	for _, r := range []wire.Rule{wire.HostNotAllowed, wire.FetchFailed, wire.BudgetExhausted, wire.ExecTimeout, wire.UnattributedCall, wire.MachineClosed} {
		d, l, _ := testRemote(t, Machine, 0)
		out := ask(d, call("c", "x"), time.Hour)
		sent := l.next(t)
		frame := fmt.Sprintf(`{"v":1,"callId":%q,"ok":false,"refused":%q,"why":"peer text","budget":{"requestsUsed":3,"requestsLimit":3}}`, sent.CallID, r)
		if err := d.Answer([]byte(frame)); err != nil {
			t.Fatal(err)
		}
		a := <-out
		if a.OK || a.Refused != r || a.Why != "peer text" || a.Budget == nil || *a.Budget != (wire.Budget{RequestsUsed: 3, RequestsLimit: 3}) || a.CallID != "c" {
			t.Errorf("%s changed on the way: %+v", r, a)
		}
	}
}

func TestRemoteTimeout(t *testing.T) {
	for kind, rule := range map[Kind]wire.Rule{Page: wire.PageTimeout, Machine: wire.MachineTimeout} {
		d, l, reg := testRemote(t, kind, 0)
		short := testBounds
		short.TimeoutMs = 1
		a := d.Ask(context.Background(), call("c", "x"), short, 3*time.Millisecond)
		wantRule(t, a, rule)
		// The why names the descriptor's bound and the broker's grace.
		who := map[Kind]string{Page: "the page executor", Machine: "the environment"}[kind]
		if want := who + " did not answer within bounds.timeoutMs 1 ms plus channel.grace_ms 2 ms"; a.Why != want {
			t.Errorf("why %q, want %q", a.Why, want)
		}
		if a.CallID != "c" || d.Pending() != 0 {
			t.Errorf("callId %q, pending %d", a.CallID, d.Pending())
		}
		if v := testutil.ToFloat64(reg.ChannelTimeouts.WithLabelValues(string(kind))); v != 1 {
			t.Errorf("timeouts counted %v, want 1", v)
		}
		// The answer that comes too late settles nothing and is counted.
		sent := l.next(t)
		if err := d.Answer(okFrame(sent.CallID, `{}`)); !errors.Is(err, ErrUnknownCall) {
			t.Errorf("late answer: %v", err)
		}
		if v := testutil.ToFloat64(reg.ChannelFramesRejected.WithLabelValues("unknown-call")); v != 1 {
			t.Errorf("unknown-call counted %v", v)
		}
	}
}

func TestRemoteCallerGivingUpIsNotAChannelTimeout(t *testing.T) {
	d, l, reg := testRemote(t, Page, 0)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan wire.Answer, 1)
	go func() { out <- d.Ask(ctx, call("c", "x"), testBounds, time.Hour) }()
	l.next(t)
	cancel()
	wantRule(t, <-out, wire.PageTimeout)
	if v := testutil.ToFloat64(reg.ChannelTimeouts.WithLabelValues("page")); v != 0 || d.Pending() != 0 {
		t.Errorf("timeouts %v, pending %d", v, d.Pending())
	}
}

func TestRemoteAbandonSettlesEveryCallClosed(t *testing.T) {
	for kind, rule := range map[Kind]wire.Rule{Page: wire.PageClosed, Machine: wire.MachineClosed} {
		d, l, reg := testRemote(t, kind, 0)
		var outs []<-chan wire.Answer
		for i := range 5 {
			outs = append(outs, ask(d, call(fmt.Sprint("c", i), "x"), time.Hour))
			l.next(t)
		}
		d.Abandon()
		for i, out := range outs {
			a := <-out
			wantRule(t, a, rule)
			if a.CallID != fmt.Sprint("c", i) {
				t.Errorf("callId %q", a.CallID)
			}
		}
		if v := testutil.ToFloat64(reg.ChannelInflight.WithLabelValues(string(kind))); v != 0 || d.Pending() != 0 {
			t.Errorf("inflight %v, pending %d", v, d.Pending())
		}
		// After the connection is gone a call is refused as offline, and
		// nothing is sent.
		before := len(l.ids)
		wantRule(t, d.Ask(context.Background(), call("late", "x"), testBounds, time.Hour), kind.offline())
		if len(l.ids) != before {
			t.Error("a frame was sent on an abandoned remote")
		}
		d.Abandon() // idempotent
	}
}

func TestRemoteBadFramesNeverSettle(t *testing.T) {
	d, l, reg := testRemote(t, Machine, 0)
	out := ask(d, call("c", "x"), time.Hour)
	id := l.next(t).CallID
	bad := map[string]string{
		"malformed":        `{"v":1,"callId":"` + id + `","ok":true}`,
		"not json":         `{"v":1,"callId":"` + id,
		"unknown-field":    `{"v":1,"callId":"` + id + `","ok":true,"observed":{},"grant":"everything"}`,
		"version-mismatch": `{"v":2,"callId":"` + id + `","ok":true,"observed":{}}`,
		"ill-formed rule":  `{"v":1,"callId":"` + id + `","ok":false,"refused":"","why":"x"}`,
		"unattributed":     `{"v":1,"callId":"b_0","ok":true,"observed":{}}`,
		"caller's own id":  `{"v":1,"callId":"c","ok":true,"observed":{}}`,
	}
	for name, f := range bad {
		if err := d.Answer([]byte(f)); err == nil {
			t.Errorf("%s: accepted", name)
		}
		// Answer settles synchronously: a frame that settled the call
		// has taken it out of the pending table by the time it returns.
		if d.Pending() != 1 {
			t.Fatalf("%s settled the call", name)
		}
	}
	if d.Pending() != 1 {
		t.Fatalf("pending %d", d.Pending())
	}
	for reason, want := range map[string]float64{"malformed": 3, "unknown-field": 1, "version-mismatch": 1, "unknown-call": 2} {
		if v := testutil.ToFloat64(reg.ChannelFramesRejected.WithLabelValues(reason)); v != want {
			t.Errorf("frames rejected %s = %v, want %v", reason, v, want)
		}
	}
	if err := d.Answer(okFrame(id, `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.Answer(okFrame(id, `{"n":2}`)); !errors.Is(err, ErrUnknownCall) {
		t.Errorf("duplicate answer: %v", err)
	}
	if a := <-out; !a.OK || string(a.Observed) != `{"n":1}` {
		t.Errorf("settled by %+v, want the first valid answer", a)
	}
	select {
	case a := <-out:
		t.Errorf("settled twice: %+v", a)
	default:
	}
}

func TestRemoteForeignAnswerSettlesNothing(t *testing.T) {
	reg := metrics.New()
	la, lb := newLink(), newLink()
	a := NewRemote(Machine, la, RemoteOptions{Metrics: reg})
	b := NewRemote(Machine, lb, RemoteOptions{Metrics: reg})
	outA := ask(a, call("c", "a"), time.Hour)
	idA := la.next(t).CallID
	if err := b.Answer(okFrame(idA, `{}`)); !errors.Is(err, ErrUnknownCall) {
		t.Fatalf("another peer's answer: %v", err)
	}
	if a.Pending() != 1 {
		t.Fatal("settled by another peer's answer")
	}
	a.Abandon()
	wantRule(t, <-outA, wire.MachineClosed) // the abandon, not the foreign answer, settled it
}

func TestRemoteOverloaded(t *testing.T) {
	d, l, _ := testRemote(t, Page, 2)
	o1, o2 := ask(d, call("1", "x"), time.Hour), ask(d, call("2", "x"), time.Hour)
	l.next(t)
	l.next(t)
	a := d.Ask(context.Background(), call("3", "x"), testBounds, time.Hour)
	wantRule(t, a, wire.Overloaded)
	if want := "the page executor already has channel.max_inflight 2 calls in flight"; a.Why != want {
		t.Errorf("why %q, want %q", a.Why, want)
	}
	if len(l.ids) != 2 {
		t.Errorf("%d frames sent, want 2", len(l.ids))
	}
	d.Abandon()
	<-o1
	<-o2
}

// TestRemoteTimesOutWaitingToSend: a call whose turn to write never comes
// (another write holds the connection) still settles at its timeout,
// counted as one, or at once when its caller leaves, not counted; it
// sends nothing and leaves nothing pending.
func TestRemoteTimesOutWaitingToSend(t *testing.T) {
	d, l, reg := testRemote(t, Machine, 0)
	l.busy.Store(true)
	wantRule(t, d.Ask(context.Background(), call("c1", "x"), testBounds, time.Millisecond), wire.MachineTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantRule(t, d.Ask(ctx, call("c2", "x"), testBounds, time.Hour), wire.MachineTimeout)
	if n := testutil.ToFloat64(reg.ChannelTimeouts.WithLabelValues("machine")); n != 1 {
		t.Errorf("channel timeouts %v, want 1", n)
	}
	if len(l.ids) != 0 || d.Pending() != 0 {
		t.Errorf("sent %d frames, %d pending; want none", len(l.ids), d.Pending())
	}
}

func TestRemoteSendFailureSettlesClosed(t *testing.T) {
	d, l, _ := testRemote(t, Machine, 0)
	l.failing.Store(true)
	wantRule(t, d.Ask(context.Background(), call("c", "x"), testBounds, time.Hour), wire.MachineClosed)
	if d.Pending() != 0 {
		t.Errorf("pending %d", d.Pending())
	}
}

// TestRemoteHammer runs P goroutines × N calls against remotes whose peer
// answers at random (correctly, twice, after garbage, with another call's
// id, never) while connections drop and come back. Every call must settle
// exactly once, with its own answer or a named refusal, and nothing may be
// left pending.
func TestRemoteHammer(t *testing.T) {
	P, N := 16, 400
	if testing.Short() {
		P, N = 4, 100
	}
	reg := metrics.New()
	h := &hammer{t: t, reg: reg, settled: map[string]int{}}
	h.connect()
	var wg sync.WaitGroup
	for g := range P {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range N {
				h.one(fmt.Sprintf("g%d-%d", g, i%7)) // callers reuse ids
			}
		}()
	}
	wg.Wait()
	h.stop()
	h.check()
}

type hammer struct {
	t       *testing.T
	reg     *metrics.Registry
	cur     atomic.Pointer[hammerConn]
	mu      sync.Mutex
	all     []*hammerConn
	settled map[string]int
	peers   sync.WaitGroup
	swaps   atomic.Int64
	outcome sync.Map // rule -> *atomic.Int64
	done    atomic.Bool
	foreign atomic.Value // a broker id sent on an earlier connection
}

type hammerConn struct {
	remote *Remote
	link   *memLink
}

// connect opens a new connection and its peer goroutine.
func (h *hammer) connect() {
	l := newLink()
	c := &hammerConn{link: l, remote: NewRemote(Machine, l, RemoteOptions{MaxInflight: 64, Metrics: h.reg})}
	c.remote.settled = func(id string) {
		h.mu.Lock()
		h.settled[id]++
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done.Load() {
		return
	}
	h.all = append(h.all, c)
	h.cur.Store(c)
	h.peers.Add(1)
	go h.peer(c)
}

// peer answers the connection's calls at random until it is dropped.
func (h *hammer) peer(c *hammerConn) {
	defer h.peers.Done()
	for f := range c.link.sent {
		call, _ := wire.ParseCall(f)
		var m struct{ M string }
		_ = json.Unmarshal(call.Args, &m)
		obs := fmt.Sprintf(`{"m":%q}`, m.M)
		switch rand.N(10) {
		case 0: // never answered: it times out
		case 1:
			_ = c.remote.Answer(okFrame(call.CallID, obs))
			_ = c.remote.Answer(okFrame(call.CallID, obs))
		case 2:
			_ = c.remote.Answer([]byte(`{"v":1,"callId":"` + call.CallID + `","ok":true}`))
			_ = c.remote.Answer(okFrame(call.CallID, obs))
		case 3: // an id this connection never carried, then the answer
			_ = c.remote.Answer(okFrame("b_0", `{"m":"nobody's"}`))
			if id, ok := h.foreign.Load().(string); ok {
				_ = c.remote.Answer(okFrame(id, `{"m":"another connection's"}`))
			}
			_ = c.remote.Answer(okFrame(call.CallID, obs))
		case 4:
			if rand.N(40) == 0 && h.cur.Load() == c && !h.done.Load() {
				h.foreign.Store(call.CallID)
				c.link.up.Store(false)
				c.remote.Abandon()
				h.swaps.Add(1)
				h.connect()
				return
			}
			fallthrough
		default:
			_ = c.remote.Answer(okFrame(call.CallID, obs))
		}
	}
}

func (h *hammer) one(callerID string) {
	marker := fmt.Sprint(rand.Uint64())
	c := h.cur.Load()
	a := c.remote.Ask(context.Background(), call(callerID, marker), testBounds, time.Duration(5+rand.N(20))*time.Millisecond)
	if a.CallID != callerID {
		h.t.Errorf("answer for %q came back as %q", callerID, a.CallID)
	}
	rule := "ok"
	if a.OK {
		if string(a.Observed) != `{"m":"`+marker+`"}` {
			h.t.Errorf("call settled with another call's answer: %s", a.Observed)
		}
	} else {
		rule = string(a.Refused)
		if a.Refused == wire.MachineUnreachable {
			// The connection is being replaced; refusals are instant, so
			// wait for the new one rather than spend every call here.
			for h.cur.Load() == c {
				runtime.Gosched()
			}
		}
		switch a.Refused {
		case wire.MachineTimeout, wire.MachineClosed, wire.MachineUnreachable, wire.Overloaded:
		default:
			h.t.Errorf("unexpected refusal %s", a.Refused)
		}
	}
	n, _ := h.outcome.LoadOrStore(rule, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// stop drops every connection and waits for the peers.
func (h *hammer) stop() {
	h.mu.Lock()
	h.done.Store(true)
	for _, c := range h.all {
		c.link.up.Store(false)
		c.remote.Abandon()
		close(c.link.sent)
	}
	h.mu.Unlock()
	h.peers.Wait()
}

func (h *hammer) check() {
	t := h.t
	sent := 0
	for _, c := range h.all {
		if c.remote.Pending() != 0 {
			t.Errorf("%d calls left pending", c.remote.Pending())
		}
		for _, id := range c.link.ids {
			sent++
			if n := h.settled[id]; n != 1 {
				t.Errorf("call %s settled %d times", id, n)
			}
		}
	}
	if len(h.settled) != sent {
		t.Errorf("%d calls settled, %d sent", len(h.settled), sent)
	}
	if v := testutil.ToFloat64(h.reg.ChannelInflight.WithLabelValues("machine")); v != 0 {
		t.Errorf("inflight gauge %v at the end", v)
	}
	h.outcome.Range(func(k, v any) bool {
		t.Logf("%s: %d", k, v.(*atomic.Int64).Load())
		return true
	})
	t.Logf("%d calls sent, %d reconnections", sent, h.swaps.Load())
}

// TestRemoteHoldsAnswersToBounds: a peer's answer is held to the bounds of
// the call it answers. An observation over maxOutputBytes settles
// output-too-large (with the peer's budget); an answer, ok or refused,
// whose budget disagrees with maxRequests settles nothing and is counted,
// and the call still takes a valid answer afterwards.
func TestRemoteHoldsAnswersToBounds(t *testing.T) {
	d, l, reg := testRemote(t, Page, 0)
	out := ask(d, call("big", "x"), time.Hour)
	id := l.next(t).CallID
	big := `{"blob":"` + strings.Repeat("x", testBounds.MaxOutputBytes) + `"}`
	if err := d.Answer(okFrame(id, big)); err != nil {
		t.Fatal(err)
	}
	a := <-out
	wantRule(t, a, wire.OutputTooLarge)
	if a.CallID != "big" || a.Budget == nil || *a.Budget != (wire.Budget{RequestsUsed: 1, RequestsLimit: 3}) {
		t.Errorf("output-too-large answer %+v", a)
	}
	if want := fmt.Sprintf("the tool's output was %d bytes, over bounds.maxOutputBytes %d", len(big), testBounds.MaxOutputBytes); a.Why != want {
		t.Errorf("output-too-large why %q, want %q", a.Why, want)
	}
	exact := `{"b":"` + strings.Repeat("x", testBounds.MaxOutputBytes-8) + `"}`
	out = ask(d, call("exact", "x"), time.Hour)
	if err := d.Answer(okFrame(l.next(t).CallID, exact)); err != nil {
		t.Fatal(err)
	}
	if a := <-out; !a.OK || string(a.Observed) != exact {
		t.Errorf("observation of exactly maxOutputBytes: %+v", a)
	}

	out = ask(d, call("budget", "x"), time.Hour)
	id = l.next(t).CallID
	for name, f := range map[string]string{
		"used over limit":   `{"v":1,"callId":"` + id + `","ok":true,"observed":{},"budget":{"requestsUsed":999,"requestsLimit":0}}`,
		"limit not bounds":  `{"v":1,"callId":"` + id + `","ok":true,"observed":{},"budget":{"requestsUsed":0,"requestsLimit":999}}`,
		"refusal's budget":  `{"v":1,"callId":"` + id + `","ok":false,"refused":"fetch-failed","why":"x","budget":{"requestsUsed":4,"requestsLimit":3}}`,
		"too large and lie": `{"v":1,"callId":"` + id + `","ok":true,"observed":` + big + `,"budget":{"requestsUsed":9,"requestsLimit":3}}`,
	} {
		if err := d.Answer([]byte(f)); !errors.Is(err, ErrFrameRejected) {
			t.Errorf("%s: %v", name, err)
		}
		if d.Pending() != 1 { // Answer settles synchronously
			t.Fatalf("%s settled the call", name)
		}
	}
	if v := testutil.ToFloat64(reg.ChannelFramesRejected.WithLabelValues(reasonBudgetMismatch)); v != 4 {
		t.Errorf("budget-mismatch %v, want 4", v)
	}
	if d.Pending() != 1 {
		t.Fatalf("pending %d", d.Pending())
	}
	if err := d.Answer(okFrame(id, `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if a := <-out; !a.OK || string(a.Observed) != `{"n":1}` {
		t.Errorf("valid answer after the bad ones: %+v", a)
	}
}
