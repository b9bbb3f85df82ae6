package calls

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// callSeries are the series one call writes, looked up once per label
// set and then kept: WithLabelValues hashes every label and takes the
// vector's lock on each call, a pre-bound child is a pointer.
// RATIONALE.md, "Why does the router keep its metric children?"
type callSeries struct {
	channel  prometheus.Counter // nil when the call found no route
	calls    prometheus.Counter
	duration prometheus.Observer
	fetches  prometheus.Observer // nil for an answer without a budget
}

// seriesKey is a call's labels, each from a closed set (the routable
// descriptors and tools, or OTHER), so the cache holds at most what the
// registry does.
type seriesKey struct {
	kind, desc, tool, outcome string
	budget                    bool // the answer has a budget: ToolFetchRequests is written
}

// seriesCache maps label sets to their children. SyncMetrics replaces it
// under labelMu's write lock whenever it deletes series, so a child it
// hands out is never one the registry no longer exports; observe reads it
// under the read lock.
type seriesCache struct{ m sync.Map } // seriesKey → *callSeries

// series returns the children for k, binding them on first use. found
// says whether the call had a route (ChannelCalls counts only those).
func (r *Router) series(k seriesKey, found bool) *callSeries {
	c := r.cache.Load()
	if v, ok := c.m.Load(k); ok {
		return v.(*callSeries)
	}
	m := r.metrics
	s := &callSeries{
		calls:    m.ToolCalls.WithLabelValues(k.desc, k.tool, k.outcome),
		duration: m.ToolCallDuration.WithLabelValues(k.desc, k.tool),
	}
	if k.budget {
		s.fetches = m.ToolFetchRequests.WithLabelValues(k.desc)
	}
	if found {
		s.channel = m.ChannelCalls.WithLabelValues(k.kind, k.outcome)
	}
	v, _ := c.m.LoadOrStore(k, s)
	return v.(*callSeries)
}
