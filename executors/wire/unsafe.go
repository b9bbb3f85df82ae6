package wire

import (
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether r is one of the characters that can make a
// logged or displayed string read as another (PROTOCOL section 1.8):
// control characters (C0, DEL and C1, NEL included: Go's
// unicode.IsControl), the bidirectional embeddings, overrides and
// isolates (U+202A–U+202E, U+2066–U+2069), the bidirectional marks (LRM
// U+200E, RLM U+200F, ALM U+061C), the line and paragraph separators
// (U+2028, U+2029), and U+FFFD, which invalid input decodes to. It is the
// one rule for text from outside: identifiers refuse these characters
// (IDRune) and whys drop them (CleanWhy).
func Unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r), r == utf8.RuneError:
		return true
	case 0x202A <= r && r <= 0x202E, 0x2066 <= r && r <= 0x2069:
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
