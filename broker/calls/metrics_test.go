package calls

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// mutable is a Source whose routes a test changes, as a plugin catalog or
// a peer's catalog does.
type mutable struct {
	mu     sync.Mutex
	routes []Route
}

func (s *mutable) set(rs ...Route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = rs
}

func (s *mutable) Lookup(id string) (Route, bool) { return fixed(s.Routes()).Lookup(id) }

func (s *mutable) Routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Route(nil), s.routes...)
}

// series counts the series of the per-descriptor families that carry
// descriptor id.
func series(t *testing.T, reg *metrics.Registry, id string) int {
	t.Helper()
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	return metrics.SeriesLabelled(mfs, "descriptor", id)
}

func TestAdmittedDescriptorsHaveZeroSeriesAndRetiredOnesNone(t *testing.T) {
	src := &mutable{}
	r, reg := newRouter(src)
	src.set(Route{Descriptor: desc("notes", "read", "search"), Executor: "local", To: wire.ExecutorFunc(ok)})
	r.SyncMetrics()

	// Each tool and OTHER, by every outcome but unattributed-call, at 0.
	outcomes := len(metrics.Outcomes()) - 1
	for _, tool := range []string{"read", "search", metrics.Other} {
		for _, o := range metrics.Outcomes() {
			if o == string(wire.UnattributedCall) {
				continue
			}
			if got := testutil.ToFloat64(reg.ToolCalls.WithLabelValues("notes", tool, o)); got != 0 {
				t.Fatalf("tool_calls{notes,%s,%s} = %v", tool, o, got)
			}
		}
	}
	// calls, duration and timeouts per tool (3 tools), plus one fetch histogram.
	want := 3*outcomes + 3 + 3 + 1
	if got := series(t, reg, "notes"); got != want {
		t.Fatalf("notes has %d series at admission, want %d", got, want)
	}

	// A tool dropped by a new version loses its series; the rest stay.
	src.set(Route{Descriptor: desc("notes", "read"), Executor: "local", To: wire.ExecutorFunc(ok)})
	r.SyncMetrics()
	if got, want := series(t, reg, "notes"), 2*outcomes+2+2+1; got != want {
		t.Fatalf("notes has %d series after dropping a tool, want %d", got, want)
	}

	// Retired: nothing of it is left.
	src.set()
	r.SyncMetrics()
	if got := series(t, reg, "notes"); got != 0 {
		t.Fatalf("retired descriptor still has %d series", got)
	}
}

// TestACallEndingAfterRetirementLeavesNoSeries: the descriptor leaves
// while its call runs; the call is counted under OTHER rather than
// bringing the deleted series back.
func TestACallEndingAfterRetirementLeavesNoSeries(t *testing.T) {
	src := &mutable{}
	r, reg := newRouter(src)
	started, release := make(chan struct{}), make(chan struct{})
	slow := wire.ExecutorFunc(func(_ context.Context, c wire.Call) wire.Answer {
		close(started)
		<-release
		return ok(context.Background(), c)
	})
	src.set(Route{Descriptor: desc("gone", "t"), Executor: "local", To: slow})
	r.SyncMetrics()
	done := make(chan wire.Answer)
	go func() { done <- r.Call(context.Background(), call("gone", "t")) }()
	<-started
	src.set()
	r.SyncMetrics()
	close(release)
	if a := <-done; !a.OK {
		t.Fatalf("the call was refused: %+v", a)
	}
	if got := series(t, reg, "gone"); got != 0 {
		t.Fatalf("a late call brought back %d series", got)
	}
	if got := testutil.ToFloat64(reg.ToolCalls.WithLabelValues(metrics.Other, metrics.Other, "ok")); got != 1 {
		t.Fatalf("the late call was not counted under OTHER: %v", got)
	}
}

// TestDeclaredToolsAreBounded: a catalog of 256 descriptors of 64 tools
// (what a peer may send) declares at most MaxDeclaredTools tools ahead of
// their calls; the others get series at their first call, and every
// series goes when the catalog does.
func TestDeclaredToolsAreBounded(t *testing.T) {
	src := &mutable{}
	r, reg := newRouter(src)
	var routes []Route
	tools := make([]string, wire.MaxTools)
	for i := range tools {
		tools[i] = fmt.Sprintf("t%d", i)
	}
	for i := range wire.MaxCatalogDescriptors {
		routes = append(routes, Route{Descriptor: desc(fmt.Sprintf("d%03d", i), tools...), Executor: "page", To: wire.ExecutorFunc(ok)})
	}
	src.set(routes...)
	r.SyncMetrics()
	got := testutil.CollectAndCount(reg.ToolTimeouts)
	if want := MaxDeclaredTools + 1; got != want { // + OTHER, OTHER
		t.Fatalf("%d tools declared, want %d", got, want)
	}
	last := fmt.Sprintf("d%03d", wire.MaxCatalogDescriptors-1)
	if n := series(t, reg, last); n != 1 { // its fetch histogram only
		t.Fatalf("an undeclared descriptor has %d series", n)
	}
	r.Call(context.Background(), call(last, "t7"))
	if v := testutil.ToFloat64(reg.ToolCalls.WithLabelValues(last, "t7", "ok")); v != 1 {
		t.Fatalf("an undeclared tool's call was not counted: %v", v)
	}
	src.set()
	r.SyncMetrics()
	if n := testutil.CollectAndCount(reg.ToolCalls); n != len(metrics.Outcomes()) {
		t.Fatalf("%d tool_calls series left, want OTHER's %d", n, len(metrics.Outcomes()))
	}
}
