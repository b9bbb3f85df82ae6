package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzFrames holds the hand-written channel frames to the encoding they
// replace: CallFrame and AnswerFrame write exactly the bytes marshal
// writes, whichever path they take (appended after other bytes too), and
// AnswerCheck passes an answer exactly when ParseAnswer accepts its
// encoding.
func FuzzFrames(f *testing.F) {
	f.Add(1, "c1", "echo", "fx", []byte(`{"text":"hello"}`), true, []byte(`{"text":"hello"}`), "", 2, 3)
	f.Add(1, "b_12", "t", "d", []byte(`{ "a" : [1, 2] }`), true, []byte(`{"a":"<&>\u2028é"}`), "why", -1, 0)
	f.Add(1, "x\"y", "t\\", "d\n", []byte(`{"a":"\u0000"}`), false, []byte(`[]`), "no \x7f", 0, 0)
	f.Add(2, "", "", "", []byte(`null`), true, []byte(``), "", 1, -5)
	f.Add(1, "c\xff", "é", "d", []byte(`{"a":1,"a":2}`), true, []byte(`{"a":"\xff"}`), "tool error: x\u202e", 10000000000000000, 1)
	rules := []Rule{"", ExecThrew, OutputTooLarge, "made-up", MachineTimeout}
	f.Fuzz(func(t *testing.T, v int, id, tool, desc string, args []byte, ok bool, observed []byte, why string, used, limit int) {
		quoted, _ := json.Marshal(id)
		if _, want := ident(quoted); ValidID(id) != want {
			t.Fatalf("ValidID(%q) = %v, ident of its encoding %v", id, !want, want)
		}
		c := Call{V: v, CallID: id, Tool: tool, DescriptorID: desc, Args: args, BoundsEcho: observed}
		want, _ := marshal(c)
		if got := CallFrame(c); !bytes.Equal(got, want) {
			t.Fatalf("CallFrame %q, marshal %q", got, want)
		}
		prefix := []byte(why)
		if got := AppendCallFrame(prefix, c); !bytes.Equal(got, append([]byte(why), want...)) {
			t.Fatalf("AppendCallFrame %q, prefix and marshal %q%q", got, why, want)
		}
		a := Answer{V: v, CallID: id, OK: ok, Observed: observed, Refused: rules[len(why)%len(rules)], Why: why}
		if used != -1 {
			a.Budget = &Budget{RequestsUsed: used, RequestsLimit: limit}
		}
		want, _ = marshal(a)
		if got := AnswerFrame(a); !bytes.Equal(got, want) {
			t.Fatalf("AnswerFrame %q, marshal %q", got, want)
		}
		if got := AppendAnswerFrame(prefix, a); !bytes.Equal(got, append([]byte(why), want...)) {
			t.Fatalf("AppendAnswerFrame %q, prefix and marshal %q%q", got, why, want)
		}
		_, perr := ParseAnswer(want)
		if cerr := AnswerCheck(a); (cerr == nil) != (perr == nil) {
			t.Fatalf("AnswerCheck %v, ParseAnswer %v, of %q", cerr, perr, want)
		}
	})
}

// TestFramesFastPath: the calls the channel sends take the hand-written
// path (answers always do: Answer.AppendJSON).
func TestFramesFastPath(t *testing.T) {
	c := Call{V: 1, CallID: "b_1", Tool: "echo", DescriptorID: "fx", Args: json.RawMessage(`{"text":"a <b> & c é"}`), BoundsEcho: json.RawMessage(`{"timeoutMs":5}`)}
	if _, ok := appendCall(nil, c); !ok {
		t.Error("a parsed call is not on the fast path")
	}
}
