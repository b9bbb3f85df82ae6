package channel

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// Kind is the kind of an executor peer and the value of every peer metric
// label: never a pairing name or a connection id.
type Kind string

// The peer kinds.
const (
	Page    Kind = "page"
	Machine Kind = "machine"
)

// offline, timeout and closed are the kind's peer-absence rules
// (PROTOCOL section 5).
func (k Kind) offline() wire.Rule { return k.pick(wire.NoPage, wire.MachineUnreachable) }
func (k Kind) timeout() wire.Rule { return k.pick(wire.PageTimeout, wire.MachineTimeout) }
func (k Kind) closed() wire.Rule  { return k.pick(wire.PageClosed, wire.MachineClosed) }

// timeoutWhy is page-timeout's and machine-timeout's why: the peer did
// not answer within timeout, which is the descriptor's timeoutMs plus
// the broker's channel.grace_ms.
func (k Kind) timeoutWhy(b wire.Bounds, timeout time.Duration) string {
	grace := timeout.Milliseconds() - int64(b.TimeoutMs)
	if grace < 0 {
		return fmt.Sprintf("%s did not answer within %d ms", k.who(), timeout.Milliseconds())
	}
	return fmt.Sprintf("%s did not answer within bounds.timeoutMs %d ms plus channel.grace_ms %d ms", k.who(), b.TimeoutMs, grace)
}

// who names the peer in a why.
func (k Kind) who() string {
	if k == Page {
		return "the page executor"
	}
	return "the environment"
}

func (k Kind) pick(page, machine wire.Rule) wire.Rule {
	if k == Page {
		return page
	}
	return machine
}

// Link is one peer connection as a Remote uses it (createChannel's
// transport): whether it is up, and how to put a frame on it. Sending is
// two steps so that waiting for the turn to write can be given up while
// the write itself is bounded by the connection (link.Writer), with no
// context per frame.
type Link interface {
	// Connected reports whether frames can still reach the peer.
	Connected() bool
	// Take waits for the turn to send, and reports false, having taken
	// nothing, when stop is closed or expired fires first.
	Take(stop <-chan struct{}, expired <-chan time.Time) bool
	// Send writes one frame with the turn Take gave, and gives it back. A
	// write still in flight at deadline cuts the connection. frame is the
	// caller's again once Send returns (it is encoded into a reused
	// buffer): Send must not keep it.
	Send(frame []byte, deadline time.Time) error
}

// RemoteOptions configure a Remote.
type RemoteOptions struct {
	// MaxInflight bounds the calls awaiting an answer; past it Ask refuses
	// overloaded. Zero means 1024.
	MaxInflight int
	Metrics     *metrics.Registry
	Logger      *slog.Logger
}

// Remote is the broker's side of one connected peer (createChannel): Ask
// sends a call and waits for the peer's answer, and Answer feeds it the
// frames the peer sends back.
//
// # Notes
//
//   - Every call settles exactly once. A call is one pending entry; an
//     answer, the timeout, the caller giving up and Abandon each settle
//     it only by removing that entry under the lock, and only the remover
//     delivers, so a second settler finds nothing to do.
//   - The broker rewrites callId on the way out to an id of its own
//     ("b_<n>", unique in the process) and restores the caller's on the
//     way back. Callers that reuse ids cannot collide, and an answer can
//     only settle a call that this remote sent on this connection.
//   - A frame that fails validation, or names a call this remote is not
//     waiting for, settles nothing; it is counted by reason and logged
//     without its content.
//   - An answer is held to the bounds of the call it answers, as a local
//     executor's is (PROTOCOL section 6): a budget that disagrees with
//     maxRequests makes it an invalid frame (counted budget-mismatch,
//     settling nothing), and an observation over maxOutputBytes settles
//     output-too-large. A peer cannot hand a caller more than the
//     descriptor allows, nor misreport its fetches.
type Remote struct {
	kind     Kind
	link     Link
	max      int
	log      *slog.Logger
	m        *metrics.Registry
	inflight prometheus.Gauge

	mu      sync.Mutex
	pending map[string]*pending
	closed  bool

	// settled, when set (tests), is told each broker id as it settles.
	settled func(id string)
}

// pending is one call awaiting its answer, with the bounds its answer is
// held to. done has room for exactly the one answer its remover delivers;
// timer is the call's timeout. Both are reused: once Ask has taken the
// answer nothing else refers to the entry, and it goes back to a pool
// (RATIONALE.md, "Why are pending channel calls pooled?").
type pending struct {
	callerID string
	bounds   wire.Bounds
	done     chan wire.Answer
	timer    *time.Timer
}

var pendings = sync.Pool{New: func() any { return &pending{done: make(chan wire.Answer, 1)} }}

// start arms the entry's timer for timeout.
func (p *pending) start(timeout time.Duration) {
	if p.timer == nil {
		p.timer = time.NewTimer(timeout)
		return
	}
	p.timer.Reset(timeout)
}

// free returns an entry whose answer Ask has taken to the pool. A stopped
// timer delivers nothing afterwards (Go 1.23 timers), so the next call's
// wait cannot see this one's expiry.
func (p *pending) free() {
	p.timer.Stop()
	p.callerID, p.bounds = "", wire.Bounds{}
	pendings.Put(p)
}

// nextID numbers the broker's own call ids across every remote.
var nextID atomic.Uint64

// NewRemote is the remote of one connection of kind, over link.
func NewRemote(kind Kind, link Link, o RemoteOptions) *Remote {
	if o.MaxInflight <= 0 {
		o.MaxInflight = 1024
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Metrics = metrics.OrNew(o.Metrics)
	return &Remote{kind: kind, link: link, max: o.MaxInflight, log: o.Logger, m: o.Metrics,
		inflight: o.Metrics.ChannelInflight.WithLabelValues(string(kind)), pending: map[string]*pending{}}
}

// Ask sends c to the peer and returns its answer, with c's callId. The
// answer is held to b, the bounds of c's descriptor.
//
// It refuses at once, sending nothing, when the peer is not connected
// (no-page, machine-unreachable) or has MaxInflight calls pending
// (overloaded). It settles page-timeout / machine-timeout when no valid
// answer arrives within timeout (the descriptor's timeoutMs plus the
// grace), and page-closed / machine-closed when the connection ends
// first. A caller whose ctx ends stops waiting: its call settles as timed
// out (the answer would go nowhere) without counting a channel timeout.
func (r *Remote) Ask(ctx context.Context, c wire.Call, b wire.Bounds, timeout time.Duration) wire.Answer {
	if !r.link.Connected() {
		return wire.Refuse(c.CallID, r.kind.offline(), nil)
	}
	id, p, refused := r.register(c.CallID, b)
	if refused != "" {
		a := wire.Refuse(c.CallID, refused, nil)
		if refused == wire.Overloaded {
			a.Why = fmt.Sprintf("%s already has channel.max_inflight %d calls in flight", r.kind.who(), r.max)
		}
		return a
	}
	deadline := time.Now().Add(timeout)
	p.start(timeout)
	expired := false
	if r.link.Take(ctx.Done(), p.timer.C) {
		r.send(id, c, deadline)
		select {
		case a := <-p.done:
			p.free()
			return a
		case <-p.timer.C:
			expired = true
		case <-ctx.Done():
		}
	} else {
		// The turn to write never came: the caller left, or the timer
		// fired (and Take took its tick).
		expired = ctx.Err() == nil
	}
	late := wire.Refuse(id, r.kind.timeout(), nil)
	late.Why = r.kind.timeoutWhy(b, timeout)
	if r.settle(id, late) && expired {
		r.m.ChannelTimeouts.WithLabelValues(string(r.kind)).Inc()
	}
	a := <-p.done
	p.free()
	return a
}

// register adds a pending entry under a fresh broker id, unless the remote
// is abandoned or full.
func (r *Remote) register(callerID string, b wire.Bounds) (string, *pending, wire.Rule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", nil, r.kind.offline()
	}
	if len(r.pending) >= r.max {
		return "", nil, wire.Overloaded
	}
	var buf [24]byte
	id := string(strconv.AppendUint(append(buf[:0], "b_"...), nextID.Add(1), 10))
	p := pendings.Get().(*pending)
	p.callerID, p.bounds = callerID, b
	r.pending[id] = p
	r.inflight.Inc()
	return id, p, ""
}

// send puts the call on the link under the broker's id, with the turn
// Ask took. The write is bounded by the call's deadline but not by the
// caller's context: a caller giving up must not cut a connection other
// calls share. A failed write means the connection is gone: the call
// settles closed.
func (r *Remote) send(id string, c wire.Call, deadline time.Time) {
	c.CallID = id
	buf := link.Buffer()
	frame := wire.AppendCallFrame(*buf, c)
	err := r.link.Send(frame, deadline)
	link.Release(buf, frame)
	if err != nil {
		r.settle(id, wire.Refuse(id, r.kind.closed(), nil))
	}
}

// settle delivers a to the call pending under id, if it still is, with
// the caller's callId restored. It reports whether it settled the call.
func (r *Remote) settle(id string, a wire.Answer) bool {
	r.mu.Lock()
	p, ok := r.pending[id]
	if ok {
		delete(r.pending, id)
		r.inflight.Dec()
	}
	r.mu.Unlock()
	if !ok {
		return false
	}
	r.deliver(id, p, a)
	return true
}

func (r *Remote) deliver(id string, p *pending, a wire.Answer) {
	a.CallID = p.callerID
	p.done <- a
	if r.settled != nil {
		r.settled(id)
	}
}

// Answer takes one answer frame from the peer. A valid answer settles the
// call it names, as the peer sent it (runtime refusals and their budget
// included) but with the caller's callId, and output-too-large in place
// of an observation over the call's maxOutputBytes. A refusal under a
// well-formed rule id outside the vocabulary settles exec-threw naming
// the peer's rule (wire.ParsePeerAnswer), counted unknown-rule. Anything
// else settles nothing and is counted: a frame failing validation under
// its rule id, a valid answer nobody waits for as unknown-call, one whose
// budget disagrees with the call's bounds as budget-mismatch.
func (r *Remote) Answer(frame []byte) error {
	a, foreign, err := wire.ParsePeerAnswer(frame)
	return r.take(a, foreign, err)
}

// take settles the call named by a parsed answer, or counts why not;
// foreign is ParsePeerAnswer's: the answer stands for a refusal under a
// rule this broker does not know.
func (r *Remote) take(a wire.Answer, foreign bool, err error) error {
	if err != nil {
		rule := wire.RuleOf(err)
		r.reject(string(rule), slog.LevelWarn)
		return fmt.Errorf("%w: %s", ErrFrameRejected, rule)
	}
	id := a.CallID
	r.mu.Lock()
	p, ok := r.pending[id]
	held, valid := a, true
	if ok {
		held, valid = hold(a, p.bounds)
	}
	if ok && valid {
		delete(r.pending, id)
		r.inflight.Dec()
	}
	r.mu.Unlock()
	switch {
	case !ok:
		// Usually an answer that lost the race with its timeout.
		r.reject(reasonUnknownCall, slog.LevelDebug)
		return ErrUnknownCall
	case !valid:
		r.reject(reasonBudgetMismatch, slog.LevelWarn)
		return fmt.Errorf("%w: %s", ErrFrameRejected, reasonBudgetMismatch)
	}
	if foreign {
		// A newer peer, most likely: the operator should know, but the
		// rule id is the peer's text and stays out of the log.
		r.m.ChannelFramesRejected.WithLabelValues(reasonUnknownRule).Inc()
		r.log.Warn("peer refused under an unknown rule: settled exec-threw", "peer", string(r.kind), "reason", reasonUnknownRule)
	}
	r.deliver(id, p, held)
	return nil
}

// hold holds a peer's answer to the bounds of its call: false when its
// budget disagrees with them (an invalid frame), else the answer, turned
// into output-too-large (keeping the peer's budget) when its compact
// observed is over maxOutputBytes. wire.ParseAnswer has compacted it.
// A refusal's why is the peer's own text: it passes through wire.PeerWhy
// (cut, control and bidi characters dropped) before any caller sees it.
func hold(a wire.Answer, b wire.Bounds) (wire.Answer, bool) {
	if !b.BudgetAgrees(a.Budget) {
		return a, false
	}
	if !a.OK {
		a.Why = wire.PeerWhy(a.Why)
	}
	if a.OK && !b.OutputFits(a.Observed) {
		over := wire.Refuse(a.CallID, wire.OutputTooLarge, a.Budget)
		over.Why = wire.OutputWhy(len(a.Observed), b.MaxOutputBytes)
		return over, true
	}
	return a, true
}

func (r *Remote) reject(reason string, level slog.Level) {
	r.m.ChannelFramesRejected.WithLabelValues(reason).Inc()
	r.log.Log(context.Background(), level, "channel frame rejected", "peer", string(r.kind), "reason", reason)
}

// Abandon settles every pending call closed (page-closed, machine-closed)
// and makes later Asks refuse as if the peer were not connected. The
// connection's owner calls it once the connection is gone; it is
// idempotent.
func (r *Remote) Abandon() {
	r.mu.Lock()
	r.closed = true
	all := r.pending
	r.pending = map[string]*pending{}
	r.inflight.Sub(float64(len(all)))
	r.mu.Unlock()
	for id, p := range all {
		r.deliver(id, p, wire.Refuse(id, r.kind.closed(), nil))
	}
}

// Pending is the number of calls awaiting an answer.
func (r *Remote) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}
