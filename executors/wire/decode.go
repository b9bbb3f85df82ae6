package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/airlock/airlock/config/suggest"
)

// DecodeStrict decodes one JSON value into v after the strict walk
// (Walk: duplicate keys, case-folded ones included, depth, UTF-8,
// trailing data), refusing unknown keys. Keys must spell a field's JSON
// name exactly: encoding/json would match "BEARER" to `json:"bearer"`,
// PROTOCOL section 1.7 says keys are case-sensitive, so such a key is
// unknown-field. A null where the type has no null (any field or item
// but a pointer, an interface or a value that decodes itself) is
// malformed: encoding/json would read it as the zero value, so
// "maxRequests":null would pass as 0 where the contract, and its JSON
// Schemas, have no null (broker/jsclient/RATIONALE.md, "Why is null refused where a
// field has no null?").
// Plugin descriptors, channel control messages, the pairings file and the
// /local request bodies are read with it.
//
// A refusal is a *DecodeError (its rule under it, for RuleOf): where the
// walk stopped or found the key, the key path, and what to do (the
// nearest key of that level's allowlist, the type wanted), for whoever
// reports a file (plugin.json) to its author; a wire refusal takes only
// the rule.
func DecodeStrict(data []byte, v any) error {
	if err := locate(data, MaxDepth); err != nil {
		return err
	}
	t := reflect.TypeOf(v)
	if err := exactKeys(data, 0, t, ""); err != nil {
		return err
	}
	if err := fits(data, 0, t.Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// What fits did not foresee (a value that decodes itself and
		// refuses); the decoder's text names the key or type, for an
		// operator's log, never for a wire refusal.
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return &DecodeError{Err: fail(Malformed, "does not match the expected shape"), Offset: int(ute.Offset), Path: ute.Field,
				Msg: fmt.Sprintf("does not fit %s, got %s", ute.Type, ute.Value)}
		}
		rule := Malformed
		if strings.Contains(err.Error(), "unknown field") {
			rule = UnknownField
		}
		return fmt.Errorf("%w (%v)", fail(rule, "does not match the expected shape"), err)
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactKeys walks data, found at offset base of the document at path,
// along the Go type t and refuses an object key that names no field of
// the struct it decodes into exactly, naming the nearest key allowed
// there. Values that do not have the shape t expects are left to fits;
// values decoded by their own UnmarshalJSON (such as json.RawMessage)
// and into interfaces are free-form.
func exactKeys(data []byte, base int, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return eachMember(data, base, t, path, func(m part, mt reflect.Type, known bool) error {
		if !known {
			allowed := fieldNames(t)
			msg := "unknown key " + shownKey(m.key)
			if near := suggest.Nearest(string(m.key), allowed); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			} else if len(allowed) <= maxListedKeys {
				msg += "; the keys here are " + strings.Join(allowed, ", ")
			}
			msg += " (keys are case-sensitive)"
			return &DecodeError{Err: fail(UnknownField, "a key outside the allowlist (keys are case-sensitive)"), Offset: m.at, Path: path, Msg: msg}
		}
		return exactKeys(m.value, m.start, mt, m.path)
	})
}

// maxListedKeys is how many allowed keys a message lists when it has no
// nearest one to offer.
const maxListedKeys = 8

// fits walks data along the Go type t, as exactKeys does, and refuses a
// value the type cannot hold: a null where it has no null, a string for
// a number, a fraction for a whole number. It runs after exactKeys, so a
// document with both an unknown key and a null is always unknown-field.
func fits(data []byte, base int, t reflect.Type, path string) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	base += len(data) - len(trimmed)
	data = bytes.TrimRight(trimmed, " \t\r\n")
	null := string(data) == "null"
	switch {
	case t.Kind() == reflect.Pointer && !null:
		return fits(data, base, t.Elem(), path)
	case nullable(t):
		return nil
	}
	if w := want(t); w != "" && !holds(data, t) {
		got := jsonType(data)
		if isNumber(data) && (w == "a whole number" || w == "a number") {
			got = gotNumber(data)
		}
		return &DecodeError{Err: fail(Malformed, "does not match the expected shape"), Offset: base, Path: path,
			Msg: fmt.Sprintf("want %s, got %s", w, got)}
	}
	return eachMember(data, base, t, path, func(m part, mt reflect.Type, known bool) error {
		if !known {
			return nil
		}
		return fits(m.value, m.start, mt, m.path)
	})
}

// want names what a value of kind t is in JSON, for a message; "" for a
// type fits does not check (the decoder does).
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Array:
		return "a list"
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 { // []byte is base64 text
			return "a list"
		}
	}
	return ""
}

// holds reports whether the JSON value raw (not null unless t is
// nullable) decodes into t as encoding/json would decode it.
func holds(raw []byte, t reflect.Type) bool {
	var err error
	switch k := t.Kind(); k {
	case reflect.String:
		return raw[0] == '"'
	case reflect.Bool:
		return string(raw) == "true" || string(raw) == "false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(string(raw), 10, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err = strconv.ParseUint(string(raw), 10, t.Bits())
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(string(raw), t.Bits())
		return err == nil && isNumber(raw)
	case reflect.Struct, reflect.Map:
		return raw[0] == '{'
	case reflect.Slice, reflect.Array:
		return raw[0] == '['
	}
	return err == nil
}

// jsonType names the JSON type of a walked value, never its content.
func jsonType(raw []byte) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}

// gotNumber says what is wrong with a number that does not fit a
// numeric type: a fraction, a sign or its size.
func gotNumber(raw []byte) string {
	switch {
	case bytes.ContainsAny(raw, ".eE"):
		return "a number with a fraction or an exponent"
	case raw[0] == '-':
		return "a negative number, or one out of range"
	}
	return "a number out of range"
}

// part is one member of an object or item of a list, as eachMember
// gives it: its key (nil for an item), the offsets in the document of
// its key (of the value for an item) and of its value, and its path.
type part struct {
	key       []byte
	at, start int
	value     []byte
	path      string
}

// eachMember calls fn on each member of data (at offset base of the
// document, at path) as a value of the Go type t (not a pointer) decodes
// it, in document order: for a struct, the value of each key with its
// field's type (known is false for a key that names no field); for a
// slice or an array, each item; for a map, each value. Data of another
// shape than t has no members here: fits reports it. The members come
// from the strict walk, which data has passed.
func eachMember(data []byte, base int, t reflect.Type, path string, fn func(m part, mt reflect.Type, known bool) error) error {
	var obj bool
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
	case reflect.Struct, reflect.Map:
		obj = true
	default:
		return nil
	}
	ms, isObject := spans(data)
	if isObject != obj {
		return nil
	}
	for i, m := range ms {
		mt, known := t, true
		m.at, m.start = base+m.at, base+m.start
		switch t.Kind() {
		case reflect.Struct:
			var f reflect.StructField
			f, known = fieldNamed(t, string(m.key))
			mt = f.Type
			m.path = joinPath(path, string(m.key))
		case reflect.Map:
			mt = t.Elem()
			m.path = joinPath(path, string(m.key))
		default:
			mt = t.Elem()
			m.path = fmt.Sprintf("%s[%d]", path, i)
		}
		if err := fn(m, mt, known); err != nil {
			return err
		}
	}
	return nil
}

// spans walks data and returns its top-level members (an object) or
// items (a list), with offsets relative to data, and whether it is an
// object; none when it is neither or does not pass.
func spans(data []byte) ([]part, bool) {
	w := getWalker(data, MaxDepth, true)
	defer putWalker(w)
	if w.document() != nil {
		return nil, false
	}
	out := make([]part, len(w.top))
	for i, e := range w.top {
		out[i] = part{at: e.start, start: e.start, value: data[e.start:e.end]}
		if w.isObject {
			out[i].key = bytes.Clone(w.keyText(e.key))
			out[i].at = e.key.start - 1
		}
	}
	return out, w.isObject
}

// joinPath appends key to a dotted path; a key that is not a plain name
// is quoted, so a path never carries a character that could act on a
// terminal.
func joinPath(path, key string) string {
	if !plainKey(key) {
		key = "[" + shownKey([]byte(key)) + "]"
		return path + key
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func plainKey(k string) bool {
	if k == "" || len(k) > maxShownKey {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '$' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return false
		}
	}
	return true
}

// nullable reports whether t has a null: a pointer, an interface, or a
// type that decodes itself (json.RawMessage keeps the null as written).
func nullable(t reflect.Type) bool {
	return t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface ||
		t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// fieldNamed finds the field of struct type t that encoding/json decodes
// the key name into, matching the name exactly.
func fieldNamed(t reflect.Type, name string) (found reflect.StructField, ok bool) {
	eachField(t, func(tag string, f reflect.StructField) bool {
		if tag == name {
			found, ok = f, true
		}
		return !ok
	})
	return found, ok
}

// fieldNames is every key struct type t allows: the allowlist of its
// level, for the nearest key to a refused one.
func fieldNames(t reflect.Type) []string {
	var names []string
	eachField(t, func(tag string, _ reflect.StructField) bool {
		names = append(names, tag)
		return true
	})
	return names
}

// eachField calls fn with each key of struct type t and its field, as
// encoding/json names them (embedded structs without a tag are searched
// as encoding/json promotes their fields), until fn returns false; it
// reports whether fn never did.
func eachField(t reflect.Type, fn func(key string, f reflect.StructField) bool) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || (!f.IsExported() && !f.Anonymous):
			continue
		case f.Anonymous && tag == "":
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if !eachField(et, fn) {
					return false
				}
				continue
			}
		}
		if tag == "" {
			tag = f.Name
		}
		if !fn(tag, f) {
			return false
		}
	}
	return true
}
