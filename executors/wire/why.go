package wire

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxWhyBytes bounds the why text of a refusal that came from a peer (a
// page or machine executor). A why is a short human hint; anything longer
// is a peer using it as an unbounded side channel past maxOutputBytes.
const MaxWhyBytes = 1024

// PeerWhy makes a why text written by someone else safe to pass on: it
// drops control characters (C0, DEL, C1), bidirectional embedding,
// override and isolate characters (U+202A–U+202E, U+2066–U+2069) the
// line and paragraph separators (U+2028, U+2029) and invalid UTF-8, which could rewrite or
// reorder what a caller's terminal or log shows, then cuts the rest to
// MaxWhyBytes on a UTF-8 boundary. It stops reading once the cut is
// reached, so its cost is bounded by MaxWhyBytes plus what it drops.
func PeerWhy(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || dropFromWhy(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxWhyBytes {
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
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return false
}
