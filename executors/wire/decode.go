package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
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
func DecodeStrict(data []byte, v any) error {
	if err := Walk(data, MaxDepth); err != nil {
		return err
	}
	if err := exactKeys(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := noNull(data, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The decoder's text names the offending key or type; it is for an
		// operator's log, never for a wire refusal.
		if strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("%w (%v)", fail(UnknownField, "a key outside the allowlist"), err)
		}
		return fmt.Errorf("%w (%v)", fail(Malformed, "does not match the expected shape"), err)
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactKeys walks data along the Go type t and refuses an object key
// that names no field of the struct it decodes into exactly. Values that
// do not have the shape t expects are left to the decoder, which names
// the type error; values decoded by their own UnmarshalJSON (such as
// json.RawMessage) and into interfaces are free-form.
func exactKeys(data []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return eachMember(data, t, func(raw json.RawMessage, mt reflect.Type, known bool) error {
		if !known {
			return fail(UnknownField, "a key outside the allowlist (keys are case-sensitive)")
		}
		return exactKeys(raw, mt)
	})
}

// noNull walks data along the Go type t, as exactKeys does, and refuses
// a null that would decode into a type without one. It runs after
// exactKeys, so a document with both an unknown key and a null is always
// unknown-field.
func noNull(data []byte, t reflect.Type) error {
	null := string(bytes.TrimSpace(data)) == "null"
	switch {
	case t.Kind() == reflect.Pointer && !null:
		return noNull(data, t.Elem())
	case nullable(t):
		return nil
	case null:
		return fail(Malformed, "null where the field has no null")
	}
	return eachMember(data, t, func(raw json.RawMessage, mt reflect.Type, known bool) error {
		if !known {
			return nil
		}
		return noNull(raw, mt)
	})
}

// eachMember calls fn on each member of data as a value of the Go type t
// (not a pointer) decodes it: for a struct, the value of each key with its
// field's type (known is false for a key that names no field); for a
// slice or an array, each item; for a map, each value. Data of another
// shape than t has no members here: the decoder reports it.
func eachMember(data []byte, t reflect.Type, fn func(raw json.RawMessage, mt reflect.Type, known bool) error) error {
	var items []json.RawMessage
	var keyed map[string]json.RawMessage
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if json.Unmarshal(data, &items) != nil {
			return nil
		}
	case reflect.Struct, reflect.Map:
		if json.Unmarshal(data, &keyed) != nil {
			return nil
		}
	}
	for k, raw := range keyed {
		if t.Kind() == reflect.Map {
			if err := fn(raw, t.Elem(), true); err != nil {
				return err
			}
			continue
		}
		f, known := fieldNamed(t, k)
		if err := fn(raw, f.Type, known); err != nil {
			return err
		}
	}
	for _, raw := range items {
		if err := fn(raw, t.Elem(), true); err != nil {
			return err
		}
	}
	return nil
}

// nullable reports whether t has a null: a pointer, an interface, or a
// type that decodes itself (json.RawMessage keeps the null as written).
func nullable(t reflect.Type) bool {
	return t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface ||
		t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// fieldNamed finds the field of struct type t that encoding/json decodes
// the key name into, matching the name exactly. Embedded structs without
// a tag are searched as encoding/json promotes their fields.
func fieldNamed(t reflect.Type, name string) (reflect.StructField, bool) {
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
				if sf, ok := fieldNamed(et, name); ok {
					return sf, true
				}
				continue
			}
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
