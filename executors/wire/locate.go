package wire

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// DecodeError is a refusal of DecodeStrict that says where and what: the
// rule-carrying Err (RuleOf and errors.Is see through it), the byte
// Offset in the document, the dotted Path of the object or value
// ("bounds", "tools[1].name"; "" for the document itself) and Msg, what
// is wrong there and what to do. It names keys, never a value: it is for
// the operator's terminal and log (a plugin.json refused at admission);
// a refusal on the wire carries only the rule and its static why.
type DecodeError struct {
	Err    *Error
	Offset int
	Path   string
	Msg    string
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func (e *DecodeError) Unwrap() error { return e.Err }

// LineCol is the 1-based line and column (in characters) of the byte
// offset in data, as an editor shows a place: a DecodeError's Offset
// becomes FILE:LINE:COL with it.
func LineCol(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	line, start := 1, 0
	for i, c := range data[:offset] {
		if c == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, 1 + utf8.RuneCount(data[start:offset])
}

// locate is Walk that says where a refused document went wrong.
func locate(data []byte, maxDepth int) error {
	w := getWalker(data, maxDepth, false)
	defer putWalker(w)
	err := w.document()
	if err == nil {
		return nil
	}
	e := &DecodeError{Err: err.(*Error), Offset: w.pos}
	switch {
	case err == ErrDuplicateKey:
		e.Offset = w.dupKey.start - 1
		e.Msg = fmt.Sprintf("duplicate key %s (keys that differ only in case are duplicates)", shownKey(w.keyText(w.dupKey)))
	case err == ErrTrailingData:
		e.Msg = "data after the JSON value"
	case err == ErrTooDeep:
		e.Msg = fmt.Sprintf("nested deeper than %d", maxDepth)
	case err == ErrNotUTF8:
		e.Msg = "not valid UTF-8"
	case w.pos >= len(data):
		e.Msg = "not valid JSON: it ends too soon"
	case w.why != "":
		e.Msg = fmt.Sprintf("not valid JSON: %s, found %s", w.why, shownByte(data[w.pos]))
	default:
		e.Msg = fmt.Sprintf("not valid JSON: unexpected %s", shownByte(data[w.pos]))
	}
	return e
}

// maxShownKey bounds a key quoted in a message: enough to recognize it.
const maxShownKey = 64

// shownKey quotes a key of the document for a message: cut to
// maxShownKey characters, and quoted with Go's escapes, so no character
// of it can act on a terminal.
func shownKey(k []byte) string {
	s := string(k)
	if utf8.RuneCountInString(s) > maxShownKey {
		s = string([]rune(s)[:maxShownKey]) + "…"
	}
	return strconv.Quote(s)
}

func shownByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}
