package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// The channel's frames are written by hand in the common case, the bytes
// encoding/json would write without its reflection, buffer and second
// compaction pass (broker/channel/RATIONALE.md, "Why are channel frames encoded by
// hand?"). A call's fast path takes only what it can copy verbatim:
// strings of printable ASCII without a quote or a backslash, and args and
// boundsEcho that are already compact; anything else goes through
// marshal, as before, so the bytes never differ (FuzzFrames holds the two
// to it). An answer is written by Answer.AppendJSON, the one hand-written
// answer encoder, which the HTTP API uses too.

// appendCall appends c's envelope, as marshal would write it, and reports
// false (dst unchanged) when c is outside the fast path.
func appendCall(dst []byte, c Call) ([]byte, bool) {
	if !plain(c.CallID) || !plain(c.Tool) || !plain(c.DescriptorID) || !compact(c.Args) || !compact(c.BoundsEcho) {
		return dst, false
	}
	dst = slices.Grow(dst, 80+len(c.CallID)+len(c.Tool)+len(c.DescriptorID)+len(c.Args)+len(c.BoundsEcho))
	dst = strconv.AppendInt(append(dst, `{"v":`...), int64(c.V), 10)
	dst = append(append(append(dst, `,"callId":"`...), c.CallID...), '"')
	dst = append(append(append(dst, `,"tool":"`...), c.Tool...), '"')
	dst = append(append(append(dst, `,"descriptorId":"`...), c.DescriptorID...), '"')
	dst = append(append(dst, `,"args":`...), c.Args...)
	dst = append(append(dst, `,"boundsEcho":`...), c.BoundsEcho...)
	return append(dst, '}'), true
}

// plain reports whether encoding/json writes s as its bytes between
// quotes: printable ASCII, no quote, no backslash (and, with HTML escaping
// off, <, > and & as they are).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// compact reports whether raw is valid JSON with no white space outside
// strings, which encoding/json writes unchanged (it compacts a
// json.RawMessage, with HTML escaping off in marshal).
func compact(raw []byte) bool {
	return len(raw) > 0 && !spaced(raw) && json.Valid(raw)
}

// AnswerCheck reports whether the frame AnswerFrame makes of a would pass
// ParseAnswer, without encoding it and walking the result: the version,
// callId, the budget's counts, and for an OK answer that observed is one
// JSON object that passes the strict walk within the envelope's depth;
// for a refusal, that the rule is known. An executor's door applies it
// to every answer before it leaves (link.Door).
func AnswerCheck(a Answer) error {
	if a.V != Version {
		return fail(VersionMismatch, "v must be 1")
	}
	if !identString(a.CallID) {
		return fail(Malformed, "callId must be a string of 1 to 128 identifier characters")
	}
	if b := a.Budget; b != nil && (!countFits(b.RequestsUsed) || !countFits(b.RequestsLimit)) {
		return fail(Malformed, "budget counts must be non-negative integers")
	}
	if !a.OK {
		if !a.Refused.Known() {
			return fail(Malformed, "refused must be a known rule id")
		}
		return nil
	}
	if err := Walk(a.Observed, MaxDepth-1); err != nil {
		return err
	}
	if t := bytes.TrimLeft(a.Observed, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fail(Malformed, "an ok answer needs an observed object")
	}
	return nil
}

// identString is ident for a Go string: 1 to maxIDLen characters, all
// IDRune. An invalid byte reads as utf8.RuneError, which IDRune refuses,
// as it refuses the U+FFFD that encoding would turn it into.
func identString(s string) bool {
	n := 0
	for _, r := range s {
		if n++; n > maxIDLen || !IDRune(r) {
			return false
		}
	}
	return n > 0
}

// countFits mirrors asCount: at most 16 digits, not negative.
func countFits(n int) bool { return n >= 0 && n <= 9999999999999999 }
