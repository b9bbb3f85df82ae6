// Package argsvalue decodes a call's args for the schema validator.
package argsvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Decode returns the value the schema validator reads for args: what
// jsonschema.UnmarshalJSON returns (maps, slices, strings, json.Number,
// bools, nil), decoded in one pass over the compacted args that
// wire.CompactMember has already walked (one object, unique keys, valid
// UTF-8, bounded depth). UnmarshalJSON would scan them again through a
// json.Decoder, its buffer and reflection. Anything this decoder does not
// expect sends the args to UnmarshalJSON, so it can only be faster, never
// more lenient.
// RATIONALE.md, "Why are args decoded for the schema by hand?"
func Decode(compact []byte) (any, error) {
	d := argsDecoder{data: compact}
	v, err := d.value()
	if err != nil || d.pos != len(d.data) {
		return jsonschema.UnmarshalJSON(bytes.NewReader(compact))
	}
	return v, nil
}

var errUnexpected = errors.New("args: unexpected byte")

type argsDecoder struct {
	data []byte
	pos  int
}

func (d *argsDecoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, errUnexpected
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == '-' || ('0' <= c && c <= '9'):
		return d.number()
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(d.data[d.pos:], []byte(lit.text)) {
			d.pos += len(lit.text)
			return lit.v, nil
		}
	}
	return nil, errUnexpected
}

func (d *argsDecoder) object() (any, error) {
	d.pos++ // {
	m := map[string]any{}
	if d.peek() == '}' {
		d.pos++
		return m, nil
	}
	for {
		if d.peek() != '"' {
			return nil, errUnexpected
		}
		k, err := d.str()
		if err != nil || d.peek() != ':' {
			return nil, errUnexpected
		}
		d.pos++
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, errUnexpected
		}
	}
}

func (d *argsDecoder) array() (any, error) {
	d.pos++ // [
	a := []any{}
	if d.peek() == ']' {
		d.pos++
		return a, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, nil
		default:
			return nil, errUnexpected
		}
	}
}

// str decodes a string; one with an escape is left to encoding/json.
func (d *argsDecoder) str() (string, error) {
	start := d.pos
	d.pos++ // "
	escaped := false
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; {
		case c == '\\':
			escaped = true
			d.pos += 2
			continue
		case c == '"':
			d.pos++
			raw := d.data[start:d.pos]
			if !escaped {
				if !utf8.Valid(raw) {
					return "", errUnexpected
				}
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			err := json.Unmarshal(raw, &s)
			return s, err
		case c < 0x20:
			return "", errUnexpected
		}
		d.pos++
	}
	return "", errUnexpected
}

// number takes a number's bytes as they are, as UseNumber does; their
// syntax was checked by the walk.
func (d *argsDecoder) number() (any, error) {
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if !(c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || ('0' <= c && c <= '9')) {
			break
		}
		d.pos++
	}
	n := json.Number(d.data[start:d.pos])
	if !json.Valid(d.data[start:d.pos]) {
		return nil, errUnexpected
	}
	return n, nil
}

func (d *argsDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}
