package calls

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// echoing answers a call with its args as the observation.
var echoing = wire.ExecutorFunc(func(_ context.Context, c wire.Call) wire.Answer {
	return wire.Observed(c.CallID, c.Args, &wire.Budget{RequestsUsed: 1, RequestsLimit: 2})
})

func typedRoute(t *testing.T) Route {
	t.Helper()
	s, err := toolschema.Compile(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	return Route{Descriptor: desc("d", "t", "free"), Executor: "page", To: echoing, Outputs: map[string]*toolschema.Schema{"t": s}}
}

// TestOutputSchemaHeldAtTheRouter: an observation that satisfies the
// tool's outputSchema is returned as it is; one that does not is refused
// output-invalid, named by pointer and keyword (never the value), keeping
// the executor's budget and counted under that outcome; a tool without an
// outputSchema, and a refusal, are not checked.
func TestOutputSchemaHeldAtTheRouter(t *testing.T) {
	r, reg := newRouter(fixed{typedRoute(t)})
	with := func(tool, args string) wire.Answer {
		c := call("d", tool)
		c.Args = json.RawMessage(args)
		return r.Call(context.Background(), c)
	}
	if a := with("t", `{"n":1}`); !a.OK || string(a.Observed) != `{"n":1}` {
		t.Errorf("conforming: %+v", a)
	}
	a := with("t", `{"n":"secret-value"}`)
	if a.OK || a.Refused != wire.OutputInvalid || a.Why != "/n: type" || a.Budget == nil || a.Budget.RequestsUsed != 1 {
		t.Errorf("not conforming: %+v", a)
	}
	if a := with("t", `{"m":1}`); a.Refused != wire.OutputInvalid || a.Why != "/n: required" {
		t.Errorf("missing member: %+v", a)
	}
	if a := with("free", `{"n":"x"}`); !a.OK {
		t.Errorf("a tool without an outputSchema: %+v", a)
	}
	if got := testutil.ToFloat64(reg.ToolCalls.WithLabelValues("d", "t", "output-invalid")); got != 2 {
		t.Errorf("output-invalid counted %v times", got)
	}
}

// TestOutputCheckOfALeftCallIsCancelled: validation stopped because the
// caller left is no output-invalid; nobody reads that answer.
func TestOutputCheckOfALeftCallIsCancelled(t *testing.T) {
	r, _ := newRouter(fixed{typedRoute(t)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := call("d", "t")
	c.Args = json.RawMessage(`{"n":"x"}`)
	a := r.Call(ctx, c)
	if a.Refused != wire.Cancelled {
		t.Errorf("got %+v", a)
	}
}
