package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/config/suggest"
)

// The messages of a configuration that does not decode, each one line
// that says where (the file and line, or the variable) and what to do:
//
//	config: airlock.yaml:3: exec.max_concurrent: want a whole number, got "lots"
//	config: airlock.yaml:1: unknown key "listne"; did you mean "listen"?
//
// A setting's value is shown: settings are not secrets (those come only
// from package secret). plugin_config is never decoded here (Load takes
// it out of the tree first), so none of its values can be shown.

// origin is where a layer's values came from, for a message.
type origin struct {
	file    string // the config file's path; "" for none
	data    []byte // its content, for lines
	environ []string
}

// typeError turns the decoder's error into one line naming the first
// setting (by key) whose value does not fit, where it was set, the type
// it wants and the value it got.
func typeError(err error, o origin, value func(key string) any) error {
	var keys []string
	walkErrors(err, func(e error) {
		var d *mapstructure.DecodeError
		if errors.As(e, &d) && !slices.Contains(keys, d.Name()) {
			keys = append(keys, d.Name())
		}
	})
	if len(keys) == 0 {
		return fmt.Errorf("config: %s", oneLine(err))
	}
	sort.Strings(keys)
	key := keys[0]
	msg := fmt.Sprintf("%s: want %s, got %s", key, wantAt(key), shownValue(value(key)))
	return fmt.Errorf("config: %s%s", o.where(key), msg)
}

// walkErrors calls fn on err and every error it wraps, joined ones too.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	}
}

// where names the place a key's value came from, as a message's prefix:
// the variable when the environment set it (it wins over the file), else
// FILE:LINE (FILE when the line is not known), else nothing (a flag).
func (o origin) where(key string) string {
	for _, s := range Settings {
		if s.Key != key {
			continue
		}
		for _, name := range append([]string{s.Env()}, s.Aliases...) {
			for _, kv := range o.environ {
				if strings.HasPrefix(kv, name+"=") {
					return name + ": "
				}
			}
		}
	}
	if o.file == "" {
		return ""
	}
	if line := yamlLine(o.data, strings.Split(key, ".")); line > 0 {
		return fmt.Sprintf("%s:%d: ", o.file, line)
	}
	return o.file + ": "
}

// wantAt names what the setting at key holds, from Config's field there.
func wantAt(key string) string {
	t := reflect.TypeFor[Config]()
	for _, seg := range strings.Split(key, ".") {
		if t.Kind() != reflect.Struct {
			break
		}
		f, ok := fieldByKey(t, seg)
		if !ok {
			break
		}
		t = f.Type
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Map:
		return "a map of names to values"
	case reflect.Struct:
		return "a section of settings (key: value lines under it)"
	}
	return "another type"
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("koanf") == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// maxShownValue bounds a value quoted in a message.
const maxShownValue = 64

// shownValue is a setting's value for a message: a scalar quoted (cut to
// maxShownValue characters, with Go's escapes, so nothing in it acts on
// a terminal), a list or a map by its kind.
func shownValue(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case []any:
		return "a list"
	case map[string]any:
		return "a section"
	}
	s := fmt.Sprint(v)
	if utf8.RuneCountInString(s) > maxShownValue {
		s = string([]rune(s)[:maxShownValue]) + "…"
	}
	return strconv.Quote(s)
}

// unknownKeys names each key no setting reads by its full dotted path,
// its line in the file, and the setting meant when one is close: the
// environment is checked by loadEnviron and the flags only set known
// keys, so an unused key can only be the file's. mapstructure's own
// ErrorUnused message names only the parent, which leaves the operator
// to guess where the typo is.
func unknownKeys(o origin, keys []string) error {
	type found struct {
		line int
		text string
	}
	var all []found
	for _, k := range keys {
		f := found{line: yamlLine(o.data, strings.Split(k, "."))}
		f.text = fmt.Sprintf("unknown key %q", k)
		if near := nearestSetting(k); near != "" {
			f.text += fmt.Sprintf("; did you mean %q?", near)
		}
		switch {
		case f.line > 0:
			f.text = fmt.Sprintf("%s:%d: %s", o.file, f.line, f.text)
		case o.file != "":
			f.text = o.file + ": " + f.text
		}
		all = append(all, f)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
	texts := make([]string, len(all))
	for i, f := range all {
		texts[i] = f.text
	}
	return fmt.Errorf("config: %s", strings.Join(texts, "; "))
}

// nearestSetting is the setting key meant by the unknown key typed: one
// of its section's keys when the section is known ("exec.max_concurent"
// is "exec.max_concurrent"), else any key.
func nearestSetting(typed string) string {
	var all, siblings []string
	parent, _, nested := strings.Cut(typed, ".")
	for _, s := range Settings {
		if s.Key == plugincfg.Key {
			continue
		}
		all = append(all, s.Key)
		if p, _, ok := strings.Cut(s.Key, "."); nested && ok && p == parent {
			siblings = append(siblings, s.Key)
		}
	}
	if len(siblings) > 0 {
		if near := suggest.Nearest(typed, siblings); near != "" {
			return near
		}
	}
	return suggest.Nearest(typed, all)
}

// yamlLine is the line of the key at path in the YAML document data, or
// 0 when the parser does not give one (no such key: it came from
// elsewhere, or a key holding a dot).
func yamlLine(data []byte, path []string) int {
	var doc yaml.Node
	if len(data) == 0 || yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n, line := doc.Content[0], 0
	for _, seg := range path {
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				next, line = n.Content[i+1], n.Content[i].Line
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}
