package link

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

func call(id, marker string) wire.Call {
	return wire.Call{V: 1, CallID: id, Tool: "echo", DescriptorID: "fx",
		Args: json.RawMessage(`{"m":"` + marker + `"}`), BoundsEcho: json.RawMessage(`{}`)}
}

// faulty executors: each misbehaves in one way the door must contain.
var faulty = map[string]wire.ExecutorFunc{
	"panics": func(context.Context, wire.Call) wire.Answer { panic("executor bug") },
	"panics with nil": func(context.Context, wire.Call) wire.Answer {
		var m map[string]int
		//lint:ignore SA5000 the panic is the point of this executor
		m["x"] = 1
		return wire.Answer{}
	},
	"ok without observed": func(_ context.Context, c wire.Call) wire.Answer {
		return wire.Answer{V: 1, CallID: c.CallID, OK: true}
	},
	"unknown rule": func(_ context.Context, c wire.Call) wire.Answer {
		return wire.Answer{V: 1, CallID: c.CallID, Refused: "allowed", Why: "x"}
	},
	"zero answer": func(context.Context, wire.Call) wire.Answer { return wire.Answer{} },
}

func TestDoorContainsFaults(t *testing.T) {
	c := call("c-1", "x")
	for name, run := range faulty {
		t.Run(name, func(t *testing.T) {
			x := NewDoor(run, nil)
			a := x.Call(context.Background(), c)
			if a.OK || a.Refused != wire.ExecThrew || a.CallID != "c-1" {
				t.Errorf("answered %+v", a)
			}
			frame := x.Handle(context.Background(), wire.CallFrame(c))
			got, err := wire.ParseAnswer(frame)
			if err != nil || got.Refused != wire.ExecThrew || got.CallID != "c-1" {
				t.Errorf("Handle answered %s (%v)", frame, err)
			}
		})
	}
}

func TestDoorKeepsAnswersAndForcesTheCallID(t *testing.T) {
	run := func(_ context.Context, c wire.Call) wire.Answer {
		b := &wire.Budget{RequestsUsed: 3, RequestsLimit: 3}
		if c.Tool == "refuse" {
			return wire.Answer{V: 1, CallID: "someone-else", Refused: wire.BudgetExhausted, Why: "over budget", Budget: b}
		}
		return wire.Observed("someone-else", json.RawMessage(`{"ok":1}`), b)
	}
	x := NewDoor(wire.ExecutorFunc(run), nil)
	c := call("mine", "x")
	a := x.Call(context.Background(), c)
	if !a.OK || a.CallID != "mine" || string(a.Observed) != `{"ok":1}` || a.Budget.RequestsUsed != 3 {
		t.Errorf("ok answer %+v", a)
	}
	c.Tool = "refuse"
	a = x.Call(context.Background(), c)
	if a.Refused != wire.BudgetExhausted || a.Why != "over budget" || a.CallID != "mine" || a.Budget.RequestsLimit != 3 {
		t.Errorf("refusal %+v", a)
	}
}

func TestDoorHandleBadFrames(t *testing.T) {
	x := NewDoor(wire.ExecutorFunc(func(context.Context, wire.Call) wire.Answer {
		t.Error("the executor ran for an invalid call")
		return wire.Answer{}
	}), nil)
	cases := map[string]wire.Rule{
		`{"v":1,"callId":"r1","tool":"t","descriptorId":"d","args":{},"boundsEcho":{},"grant":"all"}`: wire.UnknownField,
		`{"v":2,"callId":"r2","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}`:               wire.VersionMismatch,
		`{"v":1,"callId":"r3","tool":"t","descriptorId":"d","args":[]}`:                               wire.Malformed,
	}
	for frame, rule := range cases {
		out := x.Handle(context.Background(), []byte(frame))
		a, err := wire.ParseAnswer(out)
		if err != nil || a.Refused != rule || a.CallID == wire.UnreadableCallID {
			t.Errorf("%s: answered %s", frame, out)
		}
	}
	for _, frame := range []string{`not json`, `{"v":1,"tool":"t"}`, `[]`} {
		if out := x.Handle(context.Background(), []byte(frame)); out != nil {
			t.Errorf("%s: answered %s, want nothing (no callId to answer)", frame, out)
		}
	}
}
