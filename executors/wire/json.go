package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"unicode/utf8"
)

// maxDepth bounds nesting so a hostile document cannot make the walk (or a
// later decoder) recurse without limit.
const maxDepth = 128

// members splits data, which must be exactly one JSON object, into its
// top-level members. The whole document is walked first: invalid UTF-8, a
// duplicate key at any depth, nesting past maxDepth or trailing data make it
// malformed, because two readers could disagree on what it says.
func members(data []byte) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, fail(Malformed, "not valid UTF-8")
	}
	if err := walk(data); err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fail(Malformed, "not a JSON object")
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fail(Malformed, "not a JSON object")
	}
	return m, nil
}

// walk checks that data is one well-formed JSON value with unique keys.
func walk(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []map[string]bool // one per open container; nil for arrays
	expectKey, done := false, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && len(stack) == 0 && done {
			return nil
		}
		if err != nil {
			return fail(Malformed, "not valid JSON")
		}
		if done {
			return fail(Malformed, "trailing data after the JSON value")
		}
		if expectKey && tok != json.Delim('}') {
			key, _ := tok.(string)
			if stack[len(stack)-1][key] {
				return fail(Malformed, "duplicate key")
			}
			stack[len(stack)-1][key] = true
			expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxDepth {
				return fail(Malformed, "nested too deeply")
			}
			var keys map[string]bool
			if tok == json.Delim('{') {
				keys = map[string]bool{}
			}
			stack = append(stack, keys)
			expectKey = keys != nil
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value (scalar or container) just ended.
		done = len(stack) == 0
		expectKey = !done && stack[len(stack)-1] != nil
	}
}

// The helpers below accept exactly one JSON type each; null is never a
// value of any type.

func asString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

var integerLiteral = regexp.MustCompile(`^(0|[1-9][0-9]{0,15})$`)

// asCount accepts a non-negative integer literal (no sign, fraction or
// exponent) small enough to be exact everywhere.
func asCount(raw json.RawMessage) (int, bool) {
	if !integerLiteral.Match(raw) {
		return 0, false
	}
	var n int
	return n, json.Unmarshal(raw, &n) == nil
}

func asBool(raw json.RawMessage) (bool, bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// asObject returns raw compacted when it is a JSON object, so that a parsed
// envelope re-encodes to the same bytes.
func asObject(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// isNumber reports whether raw is a JSON number of any form.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// Canonical returns the canonical encoding of a JSON value: object keys
// sorted, no insignificant white space, numbers in their shortest form. Two
// values are equal as canonical JSON when their canonical encodings are
// byte-equal.
func Canonical(raw json.RawMessage) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fail(Malformed, "not valid JSON")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fail(Malformed, "not valid JSON")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
