package wire

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
)

// The helpers below accept exactly one JSON type each; null is never a
// value of any type.

// asString decodes a JSON string. raw comes from a walked document, so a
// string without escapes is its bytes between the quotes.
func asString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
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
	n, err := strconv.Atoi(string(raw))
	return n, err == nil
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
// envelope re-encodes to the same bytes. raw comes from a walked document:
// when it holds no white space outside strings it is already compact and
// is returned as it is, a view of the document (capacity cut, so an
// append copies), not a copy (broker/channel/RATIONALE.md, "Why do parsed envelopes
// share their frame's bytes?").
func asObject(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	if !spaced(raw) {
		return raw[:len(raw):len(raw)], true
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if json.Compact(&buf, raw) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// spaced reports whether raw holds white space outside its strings: what
// json.Compact would remove from valid JSON.
func spaced(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true
		}
	}
	return false
}

// isNumber reports whether raw is a JSON number of any form.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// Canonical returns the canonical encoding of a JSON value: object keys
// sorted, no insignificant white space, numbers in their shortest form. Two
// values are equal as canonical JSON when their canonical encodings are
// byte-equal.
//
// A value one scan finds canonical already (many a call's args) is
// returned as it is, a view of raw (capacity cut), without decoding and
// encoding it again (executors/RATIONALE.md, "Why does `wire.Canonical`
// return canonical input as it is?").
func Canonical(raw json.RawMessage) ([]byte, error) {
	if canonical(raw) {
		return raw[:len(raw):len(raw)], nil
	}
	return recode(raw)
}

// recode is Canonical by decoding raw and encoding it again.
func recode(raw json.RawMessage) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fail(Malformed, "not valid JSON")
	}
	out, err := marshal(v)
	if err != nil {
		return nil, fail(Malformed, "not valid JSON")
	}
	return out, nil
}

// marshal encodes v as json.Marshal does but without HTML escaping, so
// that args and observed are sent as they were parsed: json.Marshal would
// turn "&" inside them into "\u0026" (equal JSON, other bytes).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
