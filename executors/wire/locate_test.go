package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
)

func TestLineCol(t *testing.T) {
	data := []byte("{\n  \"a\": 1,\n  \"é\": 2\n}")
	for _, c := range []struct{ offset, line, col int }{
		{0, 1, 1}, {1, 1, 2}, {2, 2, 1}, {4, 2, 3}, {13, 3, 2},
		{strings.Index(string(data), "2"), 3, 8}, // é is one column
		{len(data), 4, 2}, {-5, 1, 1}, {1 << 20, 4, 2},
	} {
		if l, col := LineCol(data, c.offset); l != c.line || col != c.col {
			t.Errorf("LineCol(%d) = %d:%d, want %d:%d", c.offset, l, col, c.line, c.col)
		}
	}
}

type locBounds struct {
	TimeoutMs int      `json:"timeoutMs"`
	Roots     []string `json:"roots"`
}

type locTool struct {
	Name string `json:"name"`
}

type locDoc struct {
	ID     string    `json:"id"`
	Tools  []locTool `json:"tools"`
	Bounds locBounds `json:"bounds"`
	Ratio  float64   `json:"ratio"`
	Flag   bool      `json:"flag"`
}

// TestDecodeStrictSaysWhere: each refusal names its place (line:col of
// the offset), the key path, and what to do, and keeps its rule.
func TestDecodeStrictSaysWhere(t *testing.T) {
	for name, c := range map[string]struct {
		in, at, msg string
		rule        Rule
	}{
		"unknown nested key": {"{\"id\":\"x\",\n \"bounds\": {\n   \"timeoutMS\": 5}}", "3:4",
			`bounds: unknown key "timeoutMS"; did you mean "timeoutMs"? (keys are case-sensitive)`, UnknownField},
		"unknown key in a list item": {`{"tools":[{"name":"a"},{"nmae":"b"}]}`, "1:25",
			`tools[1]: unknown key "nmae"; did you mean "name"?`, UnknownField},
		"unknown key, nothing near": {`{"grant":"all"}`, "1:2",
			`unknown key "grant"; the keys here are id, tools, bounds, ratio, flag`, UnknownField},
		"missing comma": {"{\"id\":\"x\"\n \"flag\":true}", "2:2",
			`not valid JSON: expected "," or "}" after a member (a comma missing?), found '"'`, Malformed},
		"trailing comma": {`{"id":"x",}`, "1:11", `expected a key in double quotes, found '}'`, Malformed},
		"ends too soon":  {`{"id":"x"`, "1:10", `not valid JSON: it ends too soon`, Malformed},
		"duplicate":      {"{\"id\":\"x\",\n\"ID\":\"y\"}", "2:1", `duplicate key "ID"`, Malformed},
		"trailing data":  {`{} {}`, "1:4", `data after the JSON value`, Malformed},
		"wrong type":     {`{"bounds":{"timeoutMs":"lots"}}`, "1:24", `bounds.timeoutMs: want a whole number, got a string`, Malformed},
		"fraction":       {`{"bounds":{"timeoutMs":1.5}}`, "1:24", `bounds.timeoutMs: want a whole number, got a number with a fraction or an exponent`, Malformed},
		"too large":      {`{"bounds":{"timeoutMs":99999999999999999999}}`, "1:24", `got a number out of range`, Malformed},
		"null":           {`{"flag":null}`, "1:9", `flag: want true or false, got null`, Malformed},
		"list item type": {`{"bounds":{"roots":["a",7]}}`, "1:25", `bounds.roots[1]: want a string, got a number`, Malformed},
		"not an object":  {`{"bounds":[]}`, "1:11", `bounds: want an object, got a list`, Malformed},
		"float":          {`{"ratio":"x"}`, "1:10", `ratio: want a number, got a string`, Malformed},
	} {
		var v locDoc
		err := DecodeStrict([]byte(c.in), &v)
		var d *DecodeError
		if !errors.As(err, &d) {
			t.Errorf("%s: %v is not a DecodeError", name, err)
			continue
		}
		line, col := LineCol([]byte(c.in), d.Offset)
		if at := fmt.Sprintf("%d:%d", line, col); at != c.at || !strings.Contains(err.Error(), c.msg) || RuleOf(err) != c.rule {
			t.Errorf("%s: %s %q (%s), want %s %q (%s)", name, at, err, RuleOf(err), c.at, c.msg, c.rule)
		}
	}
}

// TestDecodeErrorShowsNoControl: a key is shown quoted, cut, with escapes,
// so a plugin.json cannot write to the operator's terminal.
func TestDecodeErrorShowsNoControl(t *testing.T) {
	var v locDoc
	err := DecodeStrict([]byte(`{"\u001b[31m`+strings.Repeat("x", 500)+`":1}`), &v)
	msg := err.Error()
	if strings.ContainsFunc(msg, unicode.IsControl) || len(msg) > 300 || RuleOf(err) != UnknownField {
		t.Errorf("%q", msg)
	}
}

// FuzzLocate: the located walk refuses exactly what Walk refuses, with
// the same rule sentinel, at an offset inside the document; a located
// DecodeStrict refusal is in the document too and prints no control
// character.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","bounds":{"timeoutMS":1}}`, "{\"id\":\"x\"\n\"flag\":true}", `{"a":1,"A":2}`, `{"id":"x",}`,
		`{"tools":[{"name":"a"},{"nmae":"b"}]}`, `{"bounds":{"roots":["a",7]}}`, `{} x`, "{\"\xff\":1}", `[[[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := Walk(data, MaxDepth)
		got := locate(data, MaxDepth)
		var d *DecodeError
		switch {
		case want == nil && got == nil:
		case want == nil || got == nil || !errors.As(got, &d) || d.Err != want:
			t.Fatalf("%q: Walk %v, located %v", data, want, got)
		case d.Offset < 0 || d.Offset > len(data):
			t.Fatalf("%q: offset %d outside the document", data, d.Offset)
		}
		var v locDoc
		if err := DecodeStrict(data, &v); errors.As(err, &d) {
			if d.Offset < 0 || d.Offset > len(data) || strings.ContainsFunc(err.Error(), unicode.IsControl) {
				t.Fatalf("%q: %d %q", data, d.Offset, err)
			}
		}
	})
}
