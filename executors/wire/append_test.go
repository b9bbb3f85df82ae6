package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// reflectAnswer is the reflection-based encoding AppendJSON replaced, kept
// as the reference the hand-written one must equal byte for byte.
func reflectAnswer(a Answer) ([]byte, error) {
	type ok struct {
		V        int             `json:"v"`
		CallID   string          `json:"callId"`
		OK       bool            `json:"ok"`
		Observed json.RawMessage `json:"observed"`
		Budget   *Budget         `json:"budget,omitempty"`
	}
	type refused struct {
		V       int     `json:"v"`
		CallID  string  `json:"callId"`
		OK      bool    `json:"ok"`
		Refused Rule    `json:"refused"`
		Why     string  `json:"why"`
		Budget  *Budget `json:"budget,omitempty"`
	}
	if a.OK {
		return marshal(ok{a.V, a.CallID, true, a.Observed, a.Budget})
	}
	return marshal(refused{a.V, a.CallID, false, a.Refused, a.Why, a.Budget})
}

func checkAppend(t *testing.T, a Answer) {
	t.Helper()
	want, werr := reflectAnswer(a)
	got, gerr := a.AppendJSON([]byte("prefix"))
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%+v: error %v, reflection's %v", a, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("%+v:\n got %s\nwant prefix%s", a, got, want)
	}
}

func TestAppendJSONMatchesReflection(t *testing.T) {
	b := &Budget{RequestsUsed: 3, RequestsLimit: 10}
	for _, a := range []Answer{
		Observed("call_1", json.RawMessage(`{"text":"# Welcome"}`), b),
		Observed("call_1", json.RawMessage("{ \"a\" : [1, 2,\n3], \"h\":\"<&>\u2028\" }"), nil),
		Observed("c", nil, b),
		Observed("c", json.RawMessage{}, b),
		Observed("c", json.RawMessage(`{"a":`), b),
		Refuse("call_é\"\\\x01\u2028<&>", ExecTimeout, b),
		Refuse(UnreadableCallID, Malformed, nil),
		{V: -7, CallID: "x", Refused: ArgsInvalid, Why: "path: \"\xff\" is not\tvalid"},
	} {
		checkAppend(t, a)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("call_1", []byte(`{"text":"hi"}`), "why", true, 1, 2)
	f.Add("\u2029\x00", []byte("{\"a\" :\n1}"), "\xff<", false, 0, 0)
	f.Fuzz(func(t *testing.T, id string, obs []byte, why string, ok bool, used, limit int) {
		a := Answer{V: Version, CallID: id, OK: ok, Observed: obs, Refused: ExecThrew, Why: why}
		if used >= 0 {
			a.Budget = &Budget{RequestsUsed: used, RequestsLimit: limit}
		}
		checkAppend(t, a)
	})
}
