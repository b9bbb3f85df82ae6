package wire

import (
	"bytes"
	"unicode/utf8"
)

// maxPlainDepth bounds the nesting canonical scans; deeper values take
// the slow path.
const maxPlainDepth = 64

// canonical reports whether raw is already what Canonical's decoding and
// encoding again would make of it, by one scan that accepts a plain
// subset of JSON only: no white space; object keys in strictly
// increasing byte order (the order encoding/json sorts them in, with no
// duplicate); strings without escapes whose every rune encoding/json
// writes as it is (no control character, U+2028 or U+2029, valid UTF-8);
// numbers that are integers of at most 15 digits other than -0 (exact as
// a float64, written back the same). A value outside that subset is not
// judged: it takes the slow path, which decides.
func canonical(raw []byte) bool {
	end, ok := plainValue(raw, 0, 0)
	return ok && end == len(raw)
}

// plainValue scans the value at raw[i], returning the index past it.
func plainValue(raw []byte, i, depth int) (int, bool) {
	if i >= len(raw) {
		return 0, false
	}
	switch c := raw[i]; {
	case c == '{':
		return plainObject(raw, i+1, depth+1)
	case c == '[':
		return plainArray(raw, i+1, depth+1)
	case c == '"':
		return plainString(raw, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return plainInteger(raw, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(raw[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

// plainObject scans an object's members, from past its '{'.
func plainObject(raw []byte, i, depth int) (int, bool) {
	if depth > maxPlainDepth || i >= len(raw) {
		return 0, false
	}
	if raw[i] == '}' {
		return i + 1, true
	}
	var last []byte
	for first := true; ; first = false {
		if i >= len(raw) || raw[i] != '"' {
			return 0, false
		}
		end, ok := plainString(raw, i)
		if !ok {
			return 0, false
		}
		key := raw[i+1 : end-1]
		if !first && bytes.Compare(last, key) >= 0 {
			return 0, false
		}
		last = key
		if end >= len(raw) || raw[end] != ':' {
			return 0, false
		}
		if i, ok = plainValue(raw, end+1, depth); !ok || i >= len(raw) {
			return 0, false
		}
		switch raw[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}

// plainArray scans an array's elements, from past its '['.
func plainArray(raw []byte, i, depth int) (int, bool) {
	if depth > maxPlainDepth || i >= len(raw) {
		return 0, false
	}
	if raw[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = plainValue(raw, i, depth); !ok || i >= len(raw) {
			return 0, false
		}
		switch raw[i] {
		case ']':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}

// plainString scans a string with no escape that encoding/json would
// write back unchanged.
func plainString(raw []byte, i int) (int, bool) {
	for j := i + 1; j < len(raw); {
		c := raw[j]
		switch {
		case c == '"':
			return j + 1, true
		case c == '\\' || c < 0x20:
			return 0, false
		case c < utf8.RuneSelf:
			j++
			continue
		}
		r, size := utf8.DecodeRune(raw[j:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			return 0, false
		}
		j += size
	}
	return 0, false
}

// plainInteger scans -?(0|[1-9][0-9]{0,14}), not -0, not followed by a
// fraction or an exponent.
func plainInteger(raw []byte, i int) (int, bool) {
	j := i
	if raw[j] == '-' {
		j++
	}
	start := j
	for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
		j++
	}
	switch n := j - start; {
	case n == 0 || n > 15:
		return 0, false
	case raw[start] == '0' && (n > 1 || start > i):
		return 0, false
	}
	if j < len(raw) && (raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E') {
		return 0, false
	}
	return j, true
}
