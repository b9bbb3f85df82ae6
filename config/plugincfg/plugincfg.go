// Package plugincfg holds the operator's named values for plugins: the
// config file's plugin_config section, which maps a plugin id to names
// and values. A value is a plain string, a secret read from a file
// ({file: PATH}, held to the token file's rules by config/secret) or one
// read from the environment ({env: NAME}):
//
//	plugin_config:
//	  weather:
//	    region: eu-west
//	    api_key: {file: /etc/airlock/weather.key}
//	    backup_key: {env: WEATHER_BACKUP_KEY}
//
// A guest reads a value through the host module's config_get, and only
// the names its plugin.json declares (PROTOCOL section 8.4). Values are
// resolved once, by Resolve, and never printed: Values formats, logs and
// marshals as a count, never as its contents.
package plugincfg

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"

	"github.com/airlock/airlock/config/pluginid"
	"github.com/airlock/airlock/config/secret"
)

// Key is the config file's section.
const Key = "plugin_config"

// Bounds on names and values. They bound what a plugin can ask for and
// what the broker holds, not what a tool usually needs.
const (
	// MaxNames bounds the names one plugin declares and one plugin's
	// section sets.
	MaxNames = 64
	// MaxNameBytes bounds a name.
	MaxNameBytes = 64
	// MaxValueBytes bounds one value, after a file's surrounding white
	// space is dropped: room for a PEM key, not for a data set.
	MaxValueBytes = 64 << 10
	// MaxPlugins bounds the plugin sections of plugin_config.
	MaxPlugins = 1024
)

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// NameRule says in words what namePattern accepts, for messages.
const NameRule = "letters, digits and _, not starting with a digit, at most 64"

// ValidName reports whether s may name a value.
func ValidName(s string) bool { return namePattern.MatchString(s) }

// CheckNames checks a list of names (plugin.json's "config"): at most
// MaxNames, each valid, and no two equal under case folding, since a
// name differing from another in case only is a mistake waiting to be
// read as the other.
func CheckNames(names []string) error {
	if len(names) > MaxNames {
		return fmt.Errorf("more than %d names", MaxNames)
	}
	seen := make(map[string]string, len(names))
	for _, n := range names {
		if !ValidName(n) {
			return fmt.Errorf("%q is not a valid name (%s)", n, NameRule)
		}
		folded := strings.ToLower(n) // names are ASCII
		if prev, dup := seen[folded]; dup {
			return fmt.Errorf("%q and %q are the same name", prev, n)
		}
		seen[folded] = n
	}
	return nil
}

// Values are resolved values by plugin id, then name. The zero value and
// a nil *Values hold none. They never print: %v, slog and JSON show how
// many plugins have values, nothing else.
type Values struct {
	m map[string]map[string]string
}

// Get returns the value of name for plugin.
func (v *Values) Get(plugin, name string) (string, bool) {
	if v == nil {
		return "", false
	}
	s, ok := v.m[plugin][name]
	return s, ok
}

// Names lists the names set for plugin, sorted.
func (v *Values) Names(plugin string) []string {
	if v == nil {
		return nil
	}
	names := make([]string, 0, len(v.m[plugin]))
	for n := range v.m[plugin] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Plugins lists the plugin ids with values, sorted.
func (v *Values) Plugins() []string {
	if v == nil {
		return nil
	}
	ids := make([]string, 0, len(v.m))
	for id := range v.m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (v Values) redacted() string {
	return fmt.Sprintf("plugin config for %d plugins (values redacted)", len(v.m))
}

// Format prints a count, whatever the verb.
func (v Values) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(v.redacted())) }

// LogValue logs a count.
func (v Values) LogValue() slog.Value { return slog.StringValue(v.redacted()) }

// MarshalJSON writes a count.
func (v Values) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", v.redacted())), nil }

// ErrInvalid is wrapped by every error of Resolve that is about the
// section's shape or a value (not about reading a file).
var ErrInvalid = errors.New("plugin config invalid")

// Resolve reads the plugin_config section as decoded from YAML (raw; nil
// for none), reading each {file: PATH} and each {env: NAME} (from
// environ, as os.Environ) now. The first problem is returned as one line
// naming its path (plugin_config.<id>.<name>) and never a value.
func Resolve(raw any, environ []string) (*Values, error) {
	v := &Values{m: map[string]map[string]string{}}
	if raw == nil {
		return v, nil
	}
	plugins, ok := raw.(map[string]any)
	if !ok {
		return nil, invalid(Key, "must map plugin ids to their values")
	}
	if len(plugins) > MaxPlugins {
		return nil, invalid(Key, fmt.Sprintf("more than %d plugins", MaxPlugins))
	}
	for _, id := range sortedKeys(plugins) {
		if !pluginid.Valid(id) {
			return nil, invalid(Key, fmt.Sprintf("%q is not a plugin id (%s)", id, pluginid.Rule))
		}
		path := Key + "." + id
		names, ok := plugins[id].(map[string]any)
		if !ok {
			return nil, invalid(path, "must map names to values")
		}
		if err := CheckNames(sortedKeys(names)); err != nil {
			return nil, invalid(path, err.Error())
		}
		v.m[id] = make(map[string]string, len(names))
		for _, name := range sortedKeys(names) {
			s, err := resolveOne(path+"."+name, names[name], environ)
			if err != nil {
				return nil, err
			}
			v.m[id][name] = s
		}
	}
	return v, nil
}

// resolveOne turns one value into its string.
func resolveOne(path string, raw any, environ []string) (string, error) {
	var s string
	switch x := raw.(type) {
	case string:
		s = x
	case map[string]any:
		ref, err := reference(path, x)
		if err != nil {
			return "", err
		}
		if s, err = ref.read(environ); err != nil {
			var pe *pathError
			if errors.As(err, &pe) {
				return "", invalid(path, pe.msg)
			}
			return "", fmt.Errorf("%s: %w", path, err)
		}
	default:
		return "", invalid(path, "give a string (quote numbers), {file: PATH} or {env: NAME}")
	}
	if len(s) > MaxValueBytes {
		return "", invalid(path, fmt.Sprintf("the value is over %d bytes", MaxValueBytes))
	}
	return s, nil
}

// ref is a value to read: from a file or from the environment.
type ref struct{ file, env string }

func reference(path string, m map[string]any) (ref, error) {
	if len(m) == 1 {
		for k, x := range m {
			if s, ok := x.(string); ok && s != "" {
				switch k {
				case "file":
					return ref{file: s}, nil
				case "env":
					return ref{env: s}, nil
				}
			}
		}
	}
	return ref{}, invalid(path, "give a string, {file: PATH} or {env: NAME}, with one non-empty key")
}

func (r ref) read(environ []string) (string, error) {
	if r.file != "" {
		return secret.ReadFile(r.file, MaxValueBytes)
	}
	if v, ok := lookupEnv(environ, r.env); ok && v != "" {
		return v, nil
	}
	return "", &pathError{msg: "environment variable " + r.env + " is not set"}
}

// EnvRefs are the environment variables the section names with {env:
// NAME}: not settings, so the check for unknown AIRLOCK_* variables
// passes them.
func EnvRefs(raw any) map[string]bool {
	out := map[string]bool{}
	plugins, _ := raw.(map[string]any)
	for _, names := range plugins {
		m, _ := names.(map[string]any)
		for _, val := range m {
			if r, ok := val.(map[string]any); ok {
				if name, ok := r["env"].(string); ok {
					out[name] = true
				}
			}
		}
	}
	return out
}

// lookupEnv finds name in environ; the last setting wins, as in
// config/secret.
func lookupEnv(environ []string, name string) (string, bool) {
	v, found := "", false
	for _, kv := range environ {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			v, found = val, true
		}
	}
	return v, found
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// pathError is a message naming its path that errors.Is matches to
// ErrInvalid, without the sentinel's words in it.
type pathError struct{ path, msg string }

func invalid(path, msg string) error { return &pathError{path: path, msg: msg} }

func (e *pathError) Error() string { return e.path + ": " + e.msg }
func (e *pathError) Unwrap() error { return ErrInvalid }
