package calls

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/executors/wire"
)

// TestKeptChildrenFollowRetirement: the router keeps each call's metric
// children, so a descriptor retired and admitted again must not be
// counted into the children SyncMetrics deleted: its calls appear in the
// registry again, counted from zero.
func TestKeptChildrenFollowRetirement(t *testing.T) {
	src := &mutable{}
	r, reg := newRouter(src)
	route := Route{Descriptor: desc("notes", "read"), Executor: "local", To: wire.ExecutorFunc(ok)}
	src.set(route)
	r.SyncMetrics()
	for range 2 {
		r.Call(context.Background(), call("notes", "read"))
	}
	if v := testutil.ToFloat64(reg.ToolCalls.WithLabelValues("notes", "read", "ok")); v != 2 {
		t.Fatalf("tool_calls{notes,read,ok} = %v, want 2", v)
	}
	src.set()
	r.SyncMetrics()
	src.set(route)
	r.SyncMetrics()
	r.Call(context.Background(), call("notes", "read"))
	if v := testutil.ToFloat64(reg.ToolCalls.WithLabelValues("notes", "read", "ok")); v != 1 {
		t.Fatalf("after readmission tool_calls{notes,read,ok} = %v, want 1", v)
	}
	if v := testutil.ToFloat64(reg.ChannelCalls.WithLabelValues("local", "ok")); v != 3 {
		t.Fatalf("channel calls{local,ok} = %v, want 3", v)
	}
}
