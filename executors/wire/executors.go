package wire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Helpers for the wazero executors, which build answers from guest output
// and must hold it to the same rules ParseAnswer applies to the envelope.

// ValidID reports whether s may be a callId, tool or descriptorId.
func ValidID(s string) bool {
	_, ok := ident(json.RawMessage(quote(s)))
	return ok
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// CompactMember returns raw compacted when it may stand as a member of an
// envelope (args in a call, observed in an answer): one JSON object, valid
// UTF-8, unique keys at every depth, and nested at most maxDepth-1 deep so
// the envelope around it stays within maxDepth.
func CompactMember(raw []byte) (json.RawMessage, error) {
	if !utf8.Valid(raw) {
		return nil, fail(Malformed, "not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fail(Malformed, "not a JSON object")
	}
	wrapped := make([]byte, 0, len(trimmed)+2)
	wrapped = append(append(append(wrapped, '['), trimmed...), ']')
	if err := walk(wrapped); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, fail(Malformed, "not valid JSON")
	}
	return buf.Bytes(), nil
}
