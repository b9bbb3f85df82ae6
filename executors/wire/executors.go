package wire

import (
	"bytes"
	"encoding/json"
)

// Helpers for the wazero executors, which build answers from guest output
// and must hold it to the same rules ParseAnswer applies to the envelope.

// ValidID reports whether s may be a callId, tool or descriptorId: what
// ident accepts once s is encoded, checked on s itself (FuzzFrames holds
// the two to the same answer).
func ValidID(s string) bool { return identString(s) }

// CompactMember returns raw compacted when it may stand as a member of an
// envelope (args in a call, observed in an answer): one JSON object, valid
// UTF-8, unique keys at every depth, and nested at most MaxDepth-1 deep so
// the envelope around it stays within MaxDepth.
func CompactMember(raw []byte) (json.RawMessage, error) {
	if err := Walk(raw, MaxDepth-1); err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(raw)
	if trimmed[0] != '{' {
		return nil, ErrNotObject
	}
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, ErrNotJSON
	}
	return buf.Bytes(), nil
}
