package calls

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixed is a Source with fixed routes.
type fixed []Route

func (s fixed) Lookup(id string) (Route, bool) {
	for _, r := range s {
		if r.Descriptor.DescriptorID == id {
			return r, true
		}
	}
	return Route{}, false
}

func (s fixed) Routes() []Route { return s }

func desc(id string, tools ...string) *wire.Descriptor {
	d := &wire.Descriptor{DescriptorID: id}
	for _, t := range tools {
		d.Tools = append(d.Tools, wire.Tool{Name: t, InputSchema: json.RawMessage(`{}`)})
	}
	return d
}

func call(id, tool string) wire.Call {
	return wire.Call{V: 1, CallID: "c1", Tool: tool, DescriptorID: id, Args: json.RawMessage(`{}`), BoundsEcho: json.RawMessage(`{}`)}
}

func ok(_ context.Context, c wire.Call) wire.Answer {
	return wire.Observed(c.CallID, json.RawMessage(`{}`), &wire.Budget{RequestsUsed: 3})
}

func newRouter(sources ...Source) (*Router, *metrics.Registry) {
	reg := metrics.New()
	return NewRouter(reg, slog.New(slog.NewJSONHandler(io.Discard, nil)), sources...), reg
}

func TestPanicInAnExecutorIsExecThrew(t *testing.T) {
	boom := wire.ExecutorFunc(func(context.Context, wire.Call) wire.Answer { panic("executor bug") })
	d := desc("d", "t")
	d.Bounds.MaxRequests = 7
	r, reg := newRouter(fixed{{Descriptor: d, Executor: "local", To: boom}})
	a := r.Call(context.Background(), call("d", "t"))
	if a.OK || a.Refused != wire.ExecThrew || a.CallID != "c1" {
		t.Fatalf("got %+v", a)
	}
	// The answer still reports the descriptor's budget, as every answer does.
	if a.Budget == nil || a.Budget.RequestsLimit != 7 || a.Budget.RequestsUsed != 0 {
		t.Fatalf("budget %+v", a.Budget)
	}
	if got := testutil.ToFloat64(reg.ToolCalls.WithLabelValues("d", "t", "exec-threw")); got != 1 {
		t.Errorf("not counted: %v", got)
	}
}

// TestCancelledCallIsNoTimeout: a peer's call whose caller left is
// settled with the timeout rule; it counts as cancelled and no time bound
// ran out, so it is no timeout. A real timeout still is one.
func TestCancelledCallIsNoTimeout(t *testing.T) {
	settle := wire.ExecutorFunc(func(_ context.Context, c wire.Call) wire.Answer {
		return wire.Refuse(c.CallID, wire.PageTimeout, nil)
	})
	r, reg := newRouter(fixed{{Descriptor: desc("pg", "t"), Executor: "page", To: settle}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Call(ctx, call("pg", "t"))
	if got := testutil.ToFloat64(reg.ToolCalls.WithLabelValues("pg", "t", metrics.Cancelled)); got != 1 {
		t.Errorf("tool_calls{cancelled} = %v", got)
	}
	if got := testutil.ToFloat64(reg.ToolTimeouts.WithLabelValues("pg", "t")); got != 0 {
		t.Errorf("a cancelled call counted as a timeout: %v", got)
	}
	r.Call(context.Background(), call("pg", "t"))
	if got := testutil.ToFloat64(reg.ToolTimeouts.WithLabelValues("pg", "t")); got != 1 {
		t.Errorf("a timeout not counted: %v", got)
	}
}

func TestUnattributedAndLabels(t *testing.T) {
	r, reg := newRouter(fixed{{Descriptor: desc("d", "t"), Executor: "local", To: wire.ExecutorFunc(ok)}})
	if a := r.Call(context.Background(), call("nope", "t")); a.Refused != wire.UnattributedCall {
		t.Fatalf("got %+v", a)
	}
	r.Call(context.Background(), call("d", "invented"))
	r.Call(context.Background(), call("d", "t"))
	for labels, want := range map[[3]string]float64{
		{metrics.Other, metrics.Other, "unattributed-call"}: 1,
		{"d", metrics.Other, "ok"}:                          1, // the executor answered; the tool name was not declared
		{"d", "t", "ok"}:                                    1,
	} {
		if got := testutil.ToFloat64(reg.ToolCalls.WithLabelValues(labels[:]...)); got != want {
			t.Errorf("tool_calls%v = %v, want %v", labels, got, want)
		}
	}
	if got := testutil.ToFloat64(reg.ChannelCalls.WithLabelValues("local", "ok")); got != 2 {
		t.Errorf("channel_calls{local,ok} = %v", got)
	}
	if got := testutil.CollectAndCount(reg.ToolFetchRequests); got != 1 {
		t.Errorf("fetch histogram series = %d", got)
	}
}

func TestPriorityIsSourceOrder(t *testing.T) {
	answer := func(who string) wire.Executor {
		return wire.ExecutorFunc(func(_ context.Context, c wire.Call) wire.Answer {
			return wire.Observed(c.CallID, json.RawMessage(`{"who":"`+who+`"}`), nil)
		})
	}
	r, _ := newRouter(
		fixed{{Descriptor: desc("shared", "t"), Executor: "local", To: answer("local")}},
		fixed{{Descriptor: desc("shared", "t"), Executor: "machine:a", To: answer("a")}, {Descriptor: desc("only-a", "t"), Executor: "machine:a", To: answer("a")}},
	)
	if a := r.Call(context.Background(), call("shared", "t")); string(a.Observed) != `{"who":"local"}` {
		t.Errorf("shared descriptor went to %s", a.Observed)
	}
	ds := r.Descriptors()
	if len(ds) != 2 || ds[0].DescriptorID != "only-a" || ds[0].Executor != "machine:a" || ds[1].Executor != "local" {
		t.Errorf("descriptors %+v", ds)
	}
}

func TestDrainRefusesNewCallsAndWaitsForOld(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	slow := wire.ExecutorFunc(func(ctx context.Context, c wire.Call) wire.Answer {
		close(started)
		<-release
		return ok(ctx, c)
	})
	r, _ := newRouter(fixed{{Descriptor: desc("d", "t"), Executor: "local", To: slow}})
	var wg sync.WaitGroup
	var first wire.Answer
	wg.Add(1)
	go func() { defer wg.Done(); first = r.Call(context.Background(), call("d", "t")) }()
	<-started
	r.Drain()
	if a := r.Call(context.Background(), call("d", "t")); a.Refused != wire.ShuttingDown {
		t.Errorf("call while draining: %+v", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := r.Wait(ctx); err == nil {
		t.Error("Wait returned while a call was in flight")
	}
	cancel()
	close(release)
	if err := r.Wait(context.Background()); err != nil {
		t.Error(err)
	}
	wg.Wait()
	if !first.OK {
		t.Errorf("the call in flight was not finished: %+v", first)
	}
}
