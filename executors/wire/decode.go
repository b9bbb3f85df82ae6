package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
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
// Schemas, have no null (RATIONALE.md, "Why is null refused where a
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
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil
		}
		for k, raw := range m {
			f, ok := fieldNamed(t, k)
			if !ok {
				return fail(UnknownField, "a key outside the allowlist (keys are case-sensitive)")
			}
			if err := exactKeys(raw, f.Type); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return nil
		}
		for _, raw := range items {
			if err := exactKeys(raw, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil
		}
		for _, raw := range m {
			if err := exactKeys(raw, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
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
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil
		}
		for k, raw := range m {
			if f, ok := fieldNamed(t, k); ok {
				if err := noNull(raw, f.Type); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array, reflect.Map:
		var items map[string]json.RawMessage
		if t.Kind() != reflect.Map {
			var list []json.RawMessage
			if json.Unmarshal(data, &list) != nil {
				return nil
			}
			items = make(map[string]json.RawMessage, len(list))
			for i, raw := range list {
				items[strconv.Itoa(i)] = raw
			}
		} else if json.Unmarshal(data, &items) != nil {
			return nil
		}
		for _, raw := range items {
			if err := noNull(raw, t.Elem()); err != nil {
				return err
			}
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
