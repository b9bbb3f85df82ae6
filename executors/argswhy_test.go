package executors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

func compileOne(t testing.TB, schema string) *toolschema.Schema {
	t.Helper()
	s, _, err := compileSchemas([]wire.Tool{{Name: "t", InputSchema: json.RawMessage(schema)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s["t"]
}

// whyOf validates args against s and returns the refusal's why ("" when
// the args pass).
func whyOf(s *toolschema.Schema, args string) string {
	_, why, _ := validArgs(context.Background(), s, json.RawMessage(args))
	return why
}

// TestArgsWhyNamesPointerAndKeyword: the why is "<pointer>: <keyword>",
// a missing property named by where it should be, the deepest failure
// chosen, anyOf named as a whole, keys escaped as RFC 6901 says.
func TestArgsWhyNamesPointerAndKeyword(t *testing.T) {
	s := compileOne(t, `{"type":"object","properties":{
		"a":{"type":"string","minLength":2,"pattern":"^x"},
		"b":{"type":"integer","minimum":1},
		"list":{"type":"array","items":{"type":"object","properties":{"k":{"enum":["p","q"]}},"required":["k"]}},
		"either":{"anyOf":[{"type":"string"},{"type":"number"}]},
		"c":{"const":"secret-const"},
		"n":{"not":{"type":"null"}},
		"ref":{"$ref":"#/$defs/pos"}
	},"required":["a","b"],"additionalProperties":false,"$defs":{"pos":{"type":"number","exclusiveMinimum":0}}}`)
	cases := []struct{ args, want string }{
		{`{"b":1}`, "/a: required"},
		{`{"a":"xy"}`, "/b: required"},
		{`{}`, "/a: required"},
		{`{"a":"xy","b":"1"}`, "/b: type"},
		{`{"a":"xy","b":0}`, "/b: minimum"},
		{`{"a":"x","b":1}`, "/a: minLength"},
		{`{"a":"yy","b":1}`, "/a: pattern"},
		{`{"a":"xy","b":1,"zz":1,"yy":2}`, `unexpected keys "yy", "zz"; allowed: a, b, c, either, list, n, ref`},
		{`{"pth":"secret-value"}`, `unexpected key "pth"; allowed: a, b, c, either, list, n, ref; /a: required`},
		{`{"a":"xy","b":1,"k1":1,"k2":1,"k3":1,"k4":1,"k5":1}`, `unexpected keys "k1", "k2", "k3", "k4", …; allowed: a, b, c, either, list, n, ref`},
		{`{"a":"xy","b":1,"list":[{"k":"p"},{},{"k":"r"}]}`, "/list/1/k: required"},
		{`{"a":"xy","b":1,"list":[{"k":"p"},{"k":"r"}]}`, "/list/1/k: enum"},
		{`{"a":"xy","b":1,"list":[{"k":"p"},5]}`, "/list/1: type"},
		{`{"a":"xy","b":1,"either":true}`, "/either: anyOf"},
		{`{"a":"xy","b":1,"c":"guess"}`, "/c: const"},
		{`{"a":"xy","b":1,"n":null}`, "/n: not"},
		{`{"a":"xy","b":1,"ref":-1}`, "/ref: exclusiveMinimum"},
		{`{"a":"xy","b":1,"a/b~c":1}`, `unexpected key "a/b~c"; allowed: a, b, c, either, list, n, ref`},
		{`{"a":"xy","b":1,"ref":1}`, ""},
	}
	for _, c := range cases {
		if got := whyOf(s, c.args); got != c.want {
			t.Errorf("%s: why %q, want %q", c.args, got, c.want)
		}
	}
	root := compileOne(t, `{"type":"object","minProperties":1}`)
	if got := whyOf(root, `{}`); got != ": minProperties" {
		t.Errorf("root failure: %q", got)
	}
	// Args that are not one object with unique keys fail before the
	// schema: the static why.
	for _, args := range []string{`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `[1]`} {
		if got := whyOf(root, args); got != wire.ArgsInvalid.Why() {
			t.Errorf("%q: why %q", args, got)
		}
	}
}

// TestArgsWhyDeterministic: several failures, reported by the validator
// in map order, always give the same why.
func TestArgsWhyDeterministic(t *testing.T) {
	s := compileOne(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"}},"additionalProperties":{"type":"string"}}`)
	args := `{"d":1,"c":2,"b":3,"a":4,"e":5,"f":6}`
	for range 50 {
		if got := whyOf(s, args); got != "/a: type" {
			t.Fatalf("why %q, want /a: type", got)
		}
	}
}

// TestArgsWhyCleansAndCutsKeys: a key is the caller's text; its control
// and bidi characters are dropped, and a pointer too long for
// wire.MaxWhyBytes is cut on a UTF-8 boundary, keeping the keyword.
func TestArgsWhyCleansAndCutsKeys(t *testing.T) {
	s := compileOne(t, `{"type":"object","additionalProperties":false}`)
	if got := whyOf(s, `{"x\u001b[2J\u202e\u200fy\u2028":1}`); got != `unexpected key "x[2Jy"; allowed: none` {
		t.Errorf("control characters kept: %q", got)
	}
	long := strings.Repeat("é", 2000)
	got := whyOf(s, `{"`+long+`":1}`)
	if want := `unexpected key "` + strings.Repeat("é", 32) + `"; allowed: none`; got != want {
		t.Errorf("long unexpected key: %d bytes, %.40q…", len(got), got)
	}
	deep := compileOne(t, `{"type":"object","properties":{"o":{"type":"object","properties":{"k":{}},"additionalProperties":false}}}`)
	if got, want := whyOf(deep, `{"o":{"kk":"secret-value"}}`), `/o: unexpected key "kk"; allowed: k`; got != want {
		t.Errorf("nested unexpected key: %q, want %q", got, want)
	}
	// patternProperties allows more than properties lists: no list.
	patterned := compileOne(t, `{"type":"object","properties":{"a":{}},"patternProperties":{"^x-":{}},"additionalProperties":false}`)
	if got, want := whyOf(patterned, `{"b":1}`), `unexpected key "b"`; got != want {
		t.Errorf("patternProperties: %q, want %q", got, want)
	}
	// A pointer too long for wire.MaxWhyBytes is cut, never the keyword.
	typed := compileOne(t, `{"type":"object","additionalProperties":{"type":"integer"}}`)
	got = whyOf(typed, `{"`+long+`":"v"}`)
	if len(got) > wire.MaxWhyBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, ": type") ||
		!strings.HasPrefix(got, "/éé") {
		t.Errorf("long key: %d bytes, %.40q…", len(got), got)
	}
}

// FuzzArgsWhy: whatever the args, the why is a valid, clean why of at
// most wire.MaxWhyBytes that never contains a string value of the args.
// Every string value the fuzzer builds carries "§", which no key, index
// or keyword has, so a why holding any part of a value shows it.
func FuzzArgsWhy(f *testing.F) {
	s := compileOne(f, `{"type":"object","properties":{
		"a":{"type":"string","maxLength":3,"pattern":"^§[a-z]*$"},
		"b":{"enum":["§one","§two"]},
		"c":{"const":"§same"},
		"list":{"type":"array","maxItems":3,"items":{"type":"string","format":"email","minLength":4}},
		"obj":{"type":"object","required":["k"],"properties":{"k":{"type":"integer"}},"additionalProperties":{"type":"number"}},
		"any":{"anyOf":[{"type":"string","minLength":10},{"type":"integer"}]}
	},"required":["a","b"],"additionalProperties":false,"propertyNames":{"maxLength":4}}`)
	f.Add("a", "x", uint8(0))
	f.Add("b", "one", uint8(1))
	f.Add("list", "\x1b\u202e", uint8(2))
	f.Add("obj", "k", uint8(3))
	f.Add("any", strings.Repeat("z", 40), uint8(4))
	f.Add("§", "", uint8(5))
	f.Fuzz(func(t *testing.T, key, val string, shape uint8) {
		key = strings.ReplaceAll(key, "§", "")
		v := "§" + val
		var value any
		switch shape % 6 {
		case 0:
			value = v
		case 1:
			value = []any{v, 1, v}
		case 2:
			value = map[string]any{"k": v, key: v}
		case 3:
			value = map[string]any{"k": 1, key: []any{v}}
		case 4:
			value = map[string]any{key: map[string]any{key: v}}
		default:
			value = 7
		}
		args, err := json.Marshal(map[string]any{key: value, "a": v, "obj": value})
		if err != nil {
			return
		}
		why := whyOf(s, string(args))
		if why == "" {
			return
		}
		if len(why) > wire.MaxWhyBytes || !utf8.ValidString(why) || wire.CleanWhy(why, wire.MaxWhyBytes) != why {
			t.Fatalf("why not clean or too long: %d bytes %q", len(why), why)
		}
		if strings.Contains(why, "§") {
			t.Fatalf("why %q echoes a value of %s", why, args)
		}
	})
}
