package toolschema

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// TestHold: an observation that satisfies the outputSchema, a refusal,
// and any answer of a tool without one pass as they are; one that does
// not satisfy it is output-invalid, named by pointer and keyword, never
// by a value, keeping the budget; a caller gone is wire.Cancelled.
func TestHold(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["n"],"additionalProperties":false}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	b := &wire.Budget{RequestsUsed: 1, RequestsLimit: 3}
	obs := func(v string) wire.Answer { return wire.Observed("c1", json.RawMessage(v), b) }
	ctx := context.Background()
	if a := s.Hold(ctx, obs(`{"n":1,"tags":["a"]}`)); !a.OK {
		t.Errorf("conforming: %+v", a)
	}
	var none *Schema
	if a := none.Hold(ctx, obs(`{"n":"x"}`)); !a.OK {
		t.Errorf("no outputSchema: %+v", a)
	}
	refused := wire.Refuse("c1", wire.ExecThrew, b)
	if a := s.Hold(ctx, refused); a.Refused != wire.ExecThrew {
		t.Errorf("a refusal: %+v", a)
	}
	for in, why := range map[string]string{
		`{"n":"secret"}`:              "/n: type",
		`{}`:                          "/n: required",
		`{"n":1,"tags":[1,"secret"]}`: "/tags/0: type",
		`{"n":1,"secret":"secret"}`:   `unexpected key "secret"; allowed: n, tags`,
		`{"n":1.5,"tags":["a","b"]} `: "/n: type",
	} {
		a := s.Hold(ctx, obs(in))
		if a.OK || a.Refused != wire.OutputInvalid || a.Why != why || a.Budget != b || a.CallID != "c1" {
			t.Errorf("%s: %+v, want why %q", in, a, why)
		}
		if strings.Contains(a.Why, `"secret"`) && !strings.HasPrefix(a.Why, "unexpected key") {
			t.Errorf("%s: the why holds a value: %q", in, a.Why)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if a := s.Hold(gone, obs(`{"n":"x"}`)); a.Refused != wire.Cancelled {
		t.Errorf("a caller gone: %+v", a)
	}
}
