package wire

import (
	"strings"
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
// drops the Unsafe characters and invalid UTF-8, which could rewrite or
// reorder what a caller's terminal or log shows, then cuts the rest to
// MaxWhyBytes on a UTF-8 boundary. It stops reading once the cut is
// reached, so its cost is bounded by MaxWhyBytes plus what it drops.
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

// CleanWhy drops the Unsafe characters (an invalid byte reads as
// utf8.RuneError, which is one) and cuts the rest to limit bytes on a
// UTF-8 boundary, for text from outside (a peer, a tool, an argument's
// key) that goes into a why.
func CleanWhy(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		if Unsafe(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
