package wire

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxWhyBytes bounds the why text of a refusal that came from a peer (a
// page or machine executor), the message of a tool error and the whole
// why of args-invalid. A why is a short human hint; anything longer is a
// peer using it as an unbounded side channel past maxOutputBytes.
const MaxWhyBytes = 1024

// ToolErrorPrefix starts the why of a tool's own error (PROTOCOL section
// 8): exec-threw with this prefix is the tool speaking; without it, the
// tool crashed or broke the ABI.
const ToolErrorPrefix = "tool error: "

// PeerWhy makes a why text written by someone else safe to pass on: it
// drops control characters (C0, DEL and C1), bidirectional embedding,
// override, isolate and mark characters (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C), the line and paragraph separators (U+2028,
// U+2029) and invalid UTF-8, which could rewrite or reorder what a
// caller's terminal or log shows, then cuts the rest to MaxWhyBytes on a
// UTF-8 boundary. It stops reading once the cut is reached, so its cost
// is bounded by MaxWhyBytes plus what it drops.
//
// A why that starts with ToolErrorPrefix is a relayed tool error: its
// message is cleaned and cut as ToolErrorWhy does, so a tool error run on
// a paired environment reaches the caller exactly as it would have run
// here.
func PeerWhy(s string) string {
	if msg, ok := strings.CutPrefix(s, ToolErrorPrefix); ok {
		if w := ToolErrorWhy(msg); w != "" {
			return w
		}
	}
	return CleanWhy(s, MaxWhyBytes)
}

// ToolErrorWhy is the why of a tool error with message msg: the prefix,
// then msg cleaned and cut to MaxWhyBytes as PeerWhy does. It is empty
// when nothing of msg survives, for the caller to fall back to the
// rule's static why: "tool error: " alone tells a caller nothing.
func ToolErrorWhy(msg string) string {
	clean := CleanWhy(msg, MaxWhyBytes)
	if clean == "" {
		return ""
	}
	return ToolErrorPrefix + clean
}

// CleanWhy drops the characters PeerWhy drops and cuts the rest to limit
// bytes on a UTF-8 boundary, for text from outside (a peer, a tool, an
// argument's key) that goes into a why.
func CleanWhy(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || dropFromWhy(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// dropFromWhy reports the characters PeerWhy removes.
func dropFromWhy(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL and C1, including NEL
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C: // LRM, RLM, ALM
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return false
}
