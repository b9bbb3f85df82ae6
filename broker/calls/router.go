// Package calls routes tool calls to the executor that admitted their
// descriptor and serves GET /v1/tools and POST /v1/calls.
//
// Every call passes through Router.Call, whatever its executor (a local
// program or a channel peer) and whatever door it came in by, so metrics,
// draining, panic containment and receipts are applied once, in one place.
package calls

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Route is where calls for one descriptor go.
type Route struct {
	// Descriptor is the admitted descriptor, shared by every call routed
	// here and never modified: a call copies nothing of it.
	Descriptor *wire.Descriptor
	// Executor is LocalExecutor, "page" or "machine:<pairing name>".
	Executor string
	// To answers the calls: one admitted program, or the channel peer
	// holding the descriptor.
	To wire.Executor
	// Outputs is the outputSchema of each tool of the descriptor that
	// declares one, compiled when the descriptor was admitted (a plugin
	// loaded, a peer's catalog accepted); never modified.
	Outputs map[string]*toolschema.Schema
}

// LocalExecutor is the executor of the broker's own plugins.
const LocalExecutor = "local"

// Kind is the peer kind of the route's executor, for metric labels:
// local, page or machine.
func (r Route) Kind() string {
	kind, _, _ := strings.Cut(r.Executor, ":")
	return kind
}

// Source is a set of routes: the local executors, the page executor, the
// paired environments.
type Source interface {
	// Lookup finds the route for one descriptor. It is on every call's
	// path and is the call's only table lookup: the route's executor
	// answers without looking the descriptor up again.
	Lookup(id string) (Route, bool)
	// Routes lists every route of the source.
	Routes() []Route
}

// Router picks the executor for each call by descriptorId.
type Router struct {
	metrics *metrics.Registry
	logger  *slog.Logger

	mu      sync.RWMutex
	sources []Source // in priority order: earlier wins a descriptorId

	draining atomic.Bool
	inflight sync.WaitGroup

	// labelMu orders SyncMetrics against observe: a call's series are
	// written under RLock from the routes as they are then, and deleted
	// under Lock, so a call that ends after its descriptor left cannot
	// bring the deleted series back.
	labelMu  sync.RWMutex
	labelled map[string]map[string]bool  // descriptor → tools with series, set by SyncMetrics
	cache    atomic.Pointer[seriesCache] // pre-bound children, replaced by SyncMetrics

	receipts   *receipts.Log // nil: no receipts
	failClosed bool          // refuse a call whose receipt cannot be written
	// bounds caches each routed descriptor's bounds digest; SyncMetrics
	// empties it, so it holds only what is routable.
	bounds sync.Map // *wire.Descriptor → string
}

// NewRouter builds a Router over sources, in priority order.
func NewRouter(reg *metrics.Registry, logger *slog.Logger, sources ...Source) *Router {
	r := &Router{metrics: metrics.OrNew(reg), logger: logger, sources: sources}
	r.cache.Store(&seriesCache{})
	return r
}

// Record writes a receipt of every call to log before its answer leaves
// (broker/receipts). With failClosed, a call whose receipt cannot be
// written is refused audit-unavailable; else it is answered, and the log
// counts and logs the failure. Call it before the router serves.
func (r *Router) Record(log *receipts.Log, failClosed bool) {
	r.receipts, r.failClosed = log, failClosed
}

// AddSource appends a source at the lowest priority.
func (r *Router) AddSource(s Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, s)
}

// resolve finds the first source that lists id.
func (r *Router) resolve(id string) (Route, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.sources {
		if rt, ok := s.Lookup(id); ok {
			return rt, true
		}
	}
	return Route{}, false
}

// Descriptors lists every routable descriptor with its executor, sorted by
// id; a descriptor listed by several sources is shown where calls go.
func (r *Router) Descriptors() []wire.Descriptor {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	var out []wire.Descriptor
	for _, s := range r.sources {
		for _, rt := range s.Routes() {
			d := *rt.Descriptor
			if seen[d.DescriptorID] {
				continue
			}
			seen[d.DescriptorID] = true
			d.Executor = rt.Executor
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DescriptorID < out[j].DescriptorID })
	return out
}

// Call answers one validated call: refused shutting-down while draining,
// unattributed-call when no source lists the descriptor, else whatever the
// executor answers. It records the call's metrics and, when the router
// records (Record), its receipt before the answer is returned.
func (r *Router) Call(ctx context.Context, c wire.Call) (a wire.Answer) {
	start := time.Now()
	rt, found := r.resolve(c.DescriptorID)
	defer func() { r.observe(rt, found, c, outcomeOf(ctx, a), a, time.Since(start)) }()
	if r.draining.Load() {
		// Not in flight (Wait may be under way), so its receipt may find
		// the log closed: the refusal stands either way.
		a = wire.Refuse(c.CallID, wire.ShuttingDown, nil)
		if r.receipts != nil {
			_ = r.receipts.Append(r.receipt(ctx, c, rt, found, a, time.Since(start)))
		}
		return a
	}
	// In flight until its receipt is written: Wait returns only then, so
	// the log is closed after the last receipt.
	r.inflight.Add(1)
	defer r.inflight.Done()
	if r.receipts == nil {
		return r.call(ctx, c, rt, found)
	}
	if r.failClosed && !r.receipts.Ready() {
		r.receipts.Unwritten()
		return wire.Refuse(c.CallID, wire.AuditUnavailable, nil)
	}
	a = r.call(ctx, c, rt, found)
	if err := r.receipts.Append(r.receipt(ctx, c, rt, found, a, time.Since(start))); err != nil && r.failClosed {
		// The tool ran, but its answer is withheld: an answer without a
		// receipt is what audit.fail closed rules out.
		return wire.Refuse(c.CallID, wire.AuditUnavailable, nil)
	}
	return a
}

// receipt is the record of one call: what was called, where, how it
// ended; the arguments only as their HMAC.
func (r *Router) receipt(ctx context.Context, c wire.Call, rt Route, found bool, a wire.Answer, took time.Duration) receipts.Record {
	ms := float64(took.Microseconds()) / 1000
	rec := receipts.Record{Kind: receipts.KindCall, Door: DoorOf(ctx), Descriptor: c.DescriptorID, Tool: c.Tool,
		CallID: c.CallID, Outcome: outcomeOf(ctx, a), DurationMs: &ms, Budget: a.Budget}
	if len(c.Args) > 0 {
		rec.ArgsHMAC = r.receipts.Args(c.Args)
	}
	if found {
		rec.Executor, rec.Module, rec.Bounds = rt.Executor, rt.Descriptor.SHA256, r.boundsDigest(rt.Descriptor)
	}
	return rec
}

// boundsDigest is d's bounds digest, computed once per admitted
// descriptor.
func (r *Router) boundsDigest(d *wire.Descriptor) string {
	if v, ok := r.bounds.Load(d); ok {
		return v.(string)
	}
	sum := receipts.BoundsDigest(d.Bounds)
	r.bounds.Store(d, sum)
	return sum
}

// call routes c: unattributed-call, or the executor's answer.
func (r *Router) call(ctx context.Context, c wire.Call, rt Route, found bool) wire.Answer {
	if !found {
		return wire.Refuse(c.CallID, wire.UnattributedCall, nil)
	}
	a, panicked := wire.Contain(ctx, rt.To, c)
	if panicked != nil {
		r.logger.Error("executor panic", "descriptor", rt.Descriptor.DescriptorID, "executor", rt.Executor,
			"callId", c.CallID, "err", panicked)
		// Every answer reports the descriptor's request budget; a call that
		// panicked is not known to have used any of it.
		a.Budget = &wire.Budget{RequestsLimit: rt.Descriptor.Bounds.MaxRequests}
	}
	if s := rt.Outputs[c.Tool]; s != nil && a.OK {
		// Every door hands on only what the tool declared (toolschema.
		// Schema.Hold): POST /v1/calls, MCP and a session alike.
		if a = s.Hold(ctx, a); a.Refused == wire.OutputInvalid {
			r.logger.Warn("call refused: the observation does not satisfy the tool's outputSchema",
				"descriptor", rt.Descriptor.DescriptorID, "executor", rt.Executor, "tool", c.Tool, "callId", c.CallID,
				"refused", string(a.Refused), "why", a.Why)
		}
	}
	return a
}

// observe records the call. Labels come from the descriptor as admitted
// when the call ends: a descriptor or tool the caller made up, or one
// retired while the call ran, is counted as OTHER.
func (r *Router) observe(rt Route, found bool, c wire.Call, outcome string, a wire.Answer, took time.Duration) {
	r.labelMu.RLock()
	defer r.labelMu.RUnlock()
	desc, tool := metrics.Other, metrics.Other
	if now, ok := r.resolve(c.DescriptorID); found && ok {
		desc = now.Descriptor.DescriptorID
		if _, ok := now.Descriptor.Tool(c.Tool); ok {
			tool = c.Tool
		}
	}
	var kind string
	if found {
		kind = rt.Kind()
	}
	s := r.series(seriesKey{kind: kind, desc: desc, tool: tool, outcome: outcome, budget: a.Budget != nil}, found)
	if s.channel != nil {
		s.channel.Inc()
	}
	s.calls.Inc()
	s.duration.Observe(took.Seconds())
	if a.Refused.IsTimeout() && outcome != metrics.Cancelled {
		// A peer's call whose caller left is settled with the timeout
		// rule, but no time bound ran out.
		r.metrics.ToolTimeouts.WithLabelValues(desc, tool).Inc()
	}
	if s.fetches != nil {
		s.fetches.Observe(float64(a.Budget.RequestsUsed))
	}
}

// MaxDeclaredTools bounds how many (descriptor, tool) pairs SyncMetrics
// declares ahead of their first call, about 40 series each: a peer's
// catalog may list 256 descriptors of 64 tools, and declaring them all
// would let one page grow the exposition by hundreds of thousands of
// lines. Past the bound (taken in routing order, so local plugins first) a
// tool's series appear at its first call, as before, and are still
// deleted when its descriptor leaves.
const MaxDeclaredTools = 256

// SyncMetrics declares at zero the series of every routable descriptor
// (each tool and OTHER, by every outcome but unattributed-call; up to
// MaxDeclaredTools) and deletes those of descriptors and tools no longer
// routable: a plugin retired, a peer's catalog that dropped one, a page
// that left (metrics/RATIONALE.md, "Why is every closed label set declared at
// zero?"). The broker runs it after every change to what the router
// lists; it reads the sources' routes, which take no lock, so it may run
// under a source's lock.
func (r *Router) SyncMetrics() {
	r.labelMu.Lock()
	defer r.labelMu.Unlock()
	r.bounds.Clear()
	r.cache.Store(&seriesCache{}) // the children below may be deleted
	now := r.routable()
	m := r.metrics
	for id, tools := range r.labelled {
		if _, ok := now[id]; !ok {
			l := prometheus.Labels{"descriptor": id}
			m.ToolCalls.DeletePartialMatch(l)
			m.ToolCallDuration.DeletePartialMatch(l)
			m.ToolTimeouts.DeletePartialMatch(l)
			m.ToolFetchRequests.DeletePartialMatch(l)
			continue
		}
		for t := range tools {
			if _, ok := now[id][t]; !ok {
				l := prometheus.Labels{"descriptor": id, "tool": t}
				m.ToolCalls.DeletePartialMatch(l)
				m.ToolCallDuration.DeletePartialMatch(l)
				m.ToolTimeouts.DeletePartialMatch(l)
			}
		}
	}
	outcomes := metrics.Outcomes()
	for id, tools := range now {
		m.ToolFetchRequests.WithLabelValues(id)
		for t, declare := range tools {
			if !declare || r.labelled[id][t] {
				continue
			}
			for _, o := range outcomes {
				if o != string(wire.UnattributedCall) {
					m.ToolCalls.WithLabelValues(id, t, o)
				}
			}
			m.ToolCallDuration.WithLabelValues(id, t)
			m.ToolTimeouts.WithLabelValues(id, t)
		}
	}
	r.labelled = now
}

// routable maps every routable descriptor to its tools and OTHER, each
// true when its series are declared: in routing order, until
// MaxDeclaredTools pairs are.
func (r *Router) routable() map[string]map[string]bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	now := map[string]map[string]bool{}
	declared := 0
	for _, s := range r.sources {
		for _, rt := range s.Routes() {
			d := rt.Descriptor
			if _, seen := now[d.DescriptorID]; seen {
				continue
			}
			tools := map[string]bool{}
			for _, name := range append([]string{metrics.Other}, toolNames(d)...) {
				tools[name] = declared < MaxDeclaredTools
				if tools[name] {
					declared++
				}
			}
			now[d.DescriptorID] = tools
		}
	}
	return now
}

func toolNames(d *wire.Descriptor) []string {
	out := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		out[i] = t.Name
	}
	return out
}

// outcomeOf is "ok" or the refusal's rule id; a rule outside the
// vocabulary (which ParseAnswer never lets through) would count as OTHER.
// A refusal that follows the caller's own cancellation (an MCP
// notifications/cancelled, a client that closed its request) counts as
// cancelled: the rule the executor gave (wire.Cancelled for a stopped
// module, the timeout rule for a peer's call) is not the tool's fault.
func outcomeOf(ctx context.Context, a wire.Answer) string {
	switch {
	case a.OK:
		return "ok"
	case ctx.Err() != nil:
		return metrics.Cancelled
	case a.Refused.Known():
		return string(a.Refused)
	}
	return metrics.Other
}

// Drain refuses new calls with shutting-down; calls in flight go on.
func (r *Router) Drain() { r.draining.Store(true) }

// Wait blocks until calls in flight have settled or ctx is done, then
// returns ctx's cause.
func (r *Router) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
