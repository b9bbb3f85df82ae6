package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The envelope parsers as they were before envelopes were split into
// slots and compact members were shared with their frame: a map of
// members (Members) and a compacted copy of every object member. FuzzSplit
// holds ParseCall and ParseAnswer to them.

func refEnvelope(data []byte, allowed map[string]bool) (map[string]json.RawMessage, error) {
	m, err := Members(data)
	if err != nil {
		return nil, err
	}
	v, present := m["v"]
	if present && isNumber(v) && string(v) != "1" {
		return nil, fail(VersionMismatch, "v must be 1")
	}
	for k := range m {
		if !allowed[k] {
			return nil, fail(UnknownField, "a key outside the allowlist")
		}
	}
	if !present {
		return nil, fail(Malformed, "v is required")
	}
	if string(v) != "1" {
		return nil, fail(Malformed, "v must be the number 1")
	}
	return m, nil
}

func refObject(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

var (
	refCallKeys   = map[string]bool{"v": true, "callId": true, "tool": true, "descriptorId": true, "args": true, "boundsEcho": true}
	refAnswerKeys = map[string]bool{"v": true, "callId": true, "ok": true, "observed": true, "refused": true, "why": true, "budget": true}
	refBudgetKeys = map[string]bool{"requestsUsed": true, "requestsLimit": true}
)

func refParseCall(data []byte) (Call, error) {
	m, err := refEnvelope(data, refCallKeys)
	if err != nil {
		return Call{}, err
	}
	c := Call{V: Version}
	var ok bool
	if c.CallID, ok = ident(m["callId"]); !ok {
		return Call{}, fail(Malformed, "callId must be a string of 1 to 128 identifier characters")
	}
	if c.Tool, ok = ident(m["tool"]); !ok {
		return Call{}, fail(Malformed, "tool must be a string of 1 to 128 identifier characters")
	}
	if c.DescriptorID, ok = ident(m["descriptorId"]); !ok {
		return Call{}, fail(Malformed, "descriptorId must be a string of 1 to 128 identifier characters")
	}
	if c.Args, ok = refObject(m["args"]); !ok {
		return Call{}, fail(Malformed, "args must be an object")
	}
	if c.BoundsEcho, ok = refObject(m["boundsEcho"]); !ok {
		return Call{}, fail(Malformed, "boundsEcho must be an object")
	}
	return c, nil
}

func refParseBudget(raw json.RawMessage) (*Budget, error) {
	m, err := Members(raw)
	if err != nil {
		return nil, fail(Malformed, "budget must be an object")
	}
	for k := range m {
		if !refBudgetKeys[k] {
			return nil, fail(UnknownField, "a budget key outside the allowlist")
		}
	}
	var b Budget
	var ok1, ok2 bool
	b.RequestsUsed, ok1 = asCount(m["requestsUsed"])
	b.RequestsLimit, ok2 = asCount(m["requestsLimit"])
	if !ok1 || !ok2 {
		return nil, fail(Malformed, "budget counts must be non-negative integers")
	}
	return &b, nil
}

func refParseAnswer(data []byte) (Answer, error) {
	m, err := refEnvelope(data, refAnswerKeys)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{V: Version}
	var ok bool
	if a.CallID, ok = ident(m["callId"]); !ok {
		return Answer{}, fail(Malformed, "callId must be a string of 1 to 128 identifier characters")
	}
	if a.OK, ok = asBool(m["ok"]); !ok {
		return Answer{}, fail(Malformed, "ok must be a boolean")
	}
	if raw, present := m["budget"]; present {
		if a.Budget, err = refParseBudget(raw); err != nil {
			return Answer{}, err
		}
	}
	if a.OK {
		if _, present := m["refused"]; present {
			return Answer{}, fail(Malformed, "an ok answer carries no refusal")
		}
		if _, present := m["why"]; present {
			return Answer{}, fail(Malformed, "an ok answer carries no refusal")
		}
		if a.Observed, ok = refObject(m["observed"]); !ok {
			return Answer{}, fail(Malformed, "an ok answer needs an observed object")
		}
		return a, nil
	}
	if _, present := m["observed"]; present {
		return Answer{}, fail(Malformed, "a refusal carries no observation")
	}
	r, ok := asString(m["refused"])
	if !ok || !Rule(r).Known() {
		return Answer{}, fail(Malformed, "refused must be a known rule id")
	}
	a.Refused = Rule(r)
	if a.Why, ok = asString(m["why"]); !ok {
		return Answer{}, fail(Malformed, "a refusal needs a why text")
	}
	return a, nil
}

// sameError: both nil, or the same text (rule and detail for a wire
// error, the walk's sentinel otherwise).
func sameError(t *testing.T, data []byte, got, want error) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
		t.Fatalf("%q: error %v, the map-based parser's %v", data, got, want)
	}
}

// FuzzSplit: ParseCall and ParseAnswer (slots, shared compact members)
// give exactly what the map-based parsers give, value and error, on any
// input; and a member shared with the frame is cut to its length, so
// appending to it cannot write into the frame.
func FuzzSplit(f *testing.F) {
	for _, dir := range []string{"wire/call", "wire/answer"} {
		for _, c := range golden(f, dir) {
			f.Add([]byte(c[0]))
		}
	}
	for _, s := range []string{
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"a":[1, 2]},"boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{"s":"a b\" c"},"boundsEcho":{ }}`,
		`{"\u0076":1,"callId":"c","ok":true,"observed":{},"budget":{"requestsUsed":0,"requestsLimit":1}}`,
		`{"v":1,"callId":"c","ok":false,"refused":"overloaded","why":"x","budget":{"v":1}}`,
		`{"v":2,"extra":1}`, `{"v":"1","callId":"c"}`, `{"V":1,"v":1}`, `[1]`, `{"v":1,"budget":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		c, err := ParseCall(in)
		rc, rerr := refParseCall(data)
		sameError(t, data, err, rerr)
		if !reflect.DeepEqual(c, rc) {
			t.Fatalf("%q: call %+v, the map-based parser's %+v", data, c, rc)
		}
		_, _ = append(c.Args, '!'), append(c.BoundsEcho, '!') // must not write into in
		a, err := ParseAnswer(in)
		ra, rerr := refParseAnswer(data)
		sameError(t, data, err, rerr)
		if !reflect.DeepEqual(a, ra) {
			t.Fatalf("%q: answer %+v, the map-based parser's %+v", data, a, ra)
		}
		_ = append(a.Observed, '!')
		if !bytes.Equal(in, data) {
			t.Fatalf("%q: parsing, or appending to a parsed member, changed the input", data)
		}
	})
}
