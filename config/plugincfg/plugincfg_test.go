package plugincfg

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/config/secret"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fileSecret, envSecret, plain = "file-secret-9f2c", "env-secret-77ab", "plain-value-31d0"

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func parse(t *testing.T, doc string) any {
	t.Helper()
	m, err := yaml.Parser().Unmarshal([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m[Key]
}

func TestResolve(t *testing.T) {
	key := writeFile(t, fileSecret+"\n", 0o600)
	raw := parse(t, fmt.Sprintf(`
plugin_config:
  weather:
    region: %s
    api_key: {file: %s}
    backup: {env: WEATHER_BACKUP}
    empty: ""
  other-plugin:
    API_KEY: x
`, plain, key))
	v, err := Resolve(raw, []string{"WEATHER_BACKUP=ignored", "WEATHER_BACKUP=" + envSecret})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, name, want string }{
		{"weather", "region", plain}, {"weather", "api_key", fileSecret}, {"weather", "backup", envSecret},
		{"weather", "empty", ""}, {"other-plugin", "API_KEY", "x"},
	} {
		if got, ok := v.Get(c.id, c.name); !ok || got != c.want {
			t.Errorf("%s.%s = %q %v, want %q", c.id, c.name, got, ok, c.want)
		}
	}
	if _, ok := v.Get("weather", "REGION"); ok {
		t.Error("names are case-sensitive")
	}
	if _, ok := v.Get("nope", "region"); ok {
		t.Error("another plugin's value")
	}
	if got := strings.Join(v.Names("weather"), ","); got != "api_key,backup,empty,region" {
		t.Errorf("names %s", got)
	}
	if got := strings.Join(v.Plugins(), ","); got != "other-plugin,weather" {
		t.Errorf("plugins %s", got)
	}
	var none *Values
	if _, ok := none.Get("weather", "region"); ok || none.Names("weather") != nil {
		t.Error("a nil Values holds values")
	}
	if v, err := Resolve(nil, nil); err != nil || len(v.Plugins()) != 0 {
		t.Errorf("no section: %v %v", v, err)
	}
}

// TestValuesNeverPrint: however a Values is printed, logged or marshalled,
// directly or inside a struct, no value shows.
func TestValuesNeverPrint(t *testing.T) {
	v, err := Resolve(parse(t, "plugin_config:\n  weather:\n    region: "+plain+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	holder := struct {
		Values *Values
		Plain  Values
	}{v, *v}
	var log strings.Builder
	slog.New(slog.NewJSONHandler(&log, nil)).Info("config", "values", v, "plain", *v, "holder", holder)
	js, _ := json.Marshal(holder)
	for _, out := range []string{fmt.Sprint(v), fmt.Sprintf("%+v %#v %s %q %x", v, v, v, v, v),
		fmt.Sprintf("%+v %#v", holder, holder), log.String(), string(js)} {
		if strings.Contains(out, plain) || strings.Contains(out, fmt.Sprintf("%x", plain)) {
			t.Errorf("a value was printed: %s", out)
		}
		if !strings.Contains(out, "redacted") {
			t.Errorf("no redaction note in %s", out)
		}
	}
}

// TestResolveRefusals: each refusal names the path and never the value.
func TestResolveRefusals(t *testing.T) {
	open := writeFile(t, fileSecret, 0o640)
	empty := writeFile(t, "\n", 0o600)
	big := writeFile(t, strings.Repeat("k", MaxValueBytes+1), 0o600)
	missing := filepath.Join(t.TempDir(), "missing")
	for name, c := range map[string]struct {
		doc  string
		kind error
		want string
	}{
		"group-readable file": {"weather: {api_key: {file: " + open + "}}", secret.ErrFile,
			"plugin_config.weather.api_key: file " + open + " is readable by group or others; chmod 600 it"},
		"empty file":       {"weather: {api_key: {file: " + empty + "}}", secret.ErrFile, "plugin_config.weather.api_key: file " + empty + " is empty"},
		"file over bound":  {"weather: {api_key: {file: " + big + "}}", secret.ErrFile, "plugin_config.weather.api_key: file " + big + " is over 65536 bytes"},
		"missing file":     {"weather: {api_key: {file: " + missing + "}}", os.ErrNotExist, "plugin_config.weather.api_key: stat " + missing},
		"unset env":        {"weather: {api_key: {env: NOT_SET}}", ErrInvalid, "plugin_config.weather.api_key: environment variable NOT_SET is not set"},
		"empty env":        {"weather: {api_key: {env: EMPTY}}", ErrInvalid, "plugin_config.weather.api_key: environment variable EMPTY is not set"},
		"two keys":         {"weather: {api_key: {file: /x, env: Y}}", ErrInvalid, "plugin_config.weather.api_key: give a string, {file: PATH} or {env: NAME}, with one non-empty key"},
		"unknown ref key":  {"weather: {api_key: {path: /x}}", ErrInvalid, "plugin_config.weather.api_key: give a string"},
		"empty ref":        {"weather: {api_key: {file: ''}}", ErrInvalid, "plugin_config.weather.api_key: give a string"},
		"number":           {"weather: {port: 8080}", ErrInvalid, "plugin_config.weather.port: give a string (quote numbers)"},
		"null":             {"weather: {port: }", ErrInvalid, "plugin_config.weather.port: give a string"},
		"list":             {"weather: {hosts: [a, b]}", ErrInvalid, "plugin_config.weather.hosts: give a string"},
		"plain over bound": {"weather: {big: " + strings.Repeat("p", MaxValueBytes+1) + "}", ErrInvalid, "plugin_config.weather.big: the value is over 65536 bytes"},
		"bad id":           {"Weather: {k: v}", ErrInvalid, `plugin_config: "Weather" is not a plugin id`},
		"not a map":        {"weather: just-a-string", ErrInvalid, "plugin_config.weather: must map names to values"},
		"bad name":         {"weather: {api-key: v}", ErrInvalid, `plugin_config.weather: "api-key" is not a valid name`},
		"folded twin":      {"weather: {API_KEY: a, api_key: b}", ErrInvalid, `plugin_config.weather: "API_KEY" and "api_key" are the same name`},
	} {
		raw := parse(t, "plugin_config:\n  "+c.doc+"\n")
		v, err := Resolve(raw, []string{"EMPTY="})
		if v != nil || !errors.Is(err, c.kind) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %v starting %q", name, err, c.kind, c.want)
			continue
		}
		if strings.Contains(err.Error(), fileSecret) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %q shows the value or is not one line", name, err)
		}
	}
	if _, err := Resolve("a string", nil); err == nil || err.Error() != "plugin_config: must map plugin ids to their values" {
		t.Errorf("section not a map: %v", err)
	}
	many := map[string]any{}
	for i := range MaxPlugins + 1 {
		many[fmt.Sprintf("p%d", i)] = map[string]any{}
	}
	if _, err := Resolve(many, nil); err == nil || !strings.Contains(err.Error(), "more than 1024 plugins") {
		t.Errorf("too many plugins: %v", err)
	}
}

func TestCheckNames(t *testing.T) {
	tooMany := make([]string, MaxNames+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("n%d", i)
	}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"api_key", "REGION", "_x", strings.Repeat("a", 64)}, ""},
		{[]string{"9lives"}, `"9lives" is not a valid name`},
		{[]string{"a.b"}, "not a valid name"},
		{[]string{""}, "not a valid name"},
		{[]string{strings.Repeat("a", 65)}, "not a valid name"},
		{[]string{"kéy"}, "not a valid name"},
		{[]string{"a", "a"}, `"a" and "a" are the same name`},
		{[]string{"Api_Key", "api_KEY"}, `"Api_Key" and "api_KEY" are the same name`},
		{tooMany, "more than 64 names"},
	} {
		err := CheckNames(c.names)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.names, err, c.want)
		}
	}
}

func TestEnvRefs(t *testing.T) {
	raw := parse(t, "plugin_config:\n  a: {k: {env: AIRLOCK_A_KEY}, p: plain}\n  b: {k: {file: /x}, j: {env: B}}\n")
	got := EnvRefs(raw)
	if len(got) != 2 || !got["AIRLOCK_A_KEY"] || !got["B"] {
		t.Errorf("EnvRefs: %v", got)
	}
	if len(EnvRefs(nil)) != 0 || len(EnvRefs("x")) != 0 {
		t.Error("EnvRefs of nothing")
	}
}

// FuzzResolve: any YAML section resolves or is refused in one line, and
// what resolves is within the bounds.
func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		"plugin_config:\n  weather:\n    region: eu\n    key: {env: K}\n",
		"plugin_config:\n  weather: {A: a, a: b}\n",
		"plugin_config:\n  w: {k: {file: /nonexistent}}\n",
		"plugin_config: [1, 2]\n",
		"plugin_config:\n  w: {k: {env: K, file: F}}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		m, err := yaml.Parser().Unmarshal([]byte(doc))
		if err != nil {
			return
		}
		v, err := Resolve(m[Key], []string{"K=v"})
		if err != nil {
			if strings.Contains(err.Error(), "=v") {
				t.Fatalf("an environment value in %q", err)
			}
			return
		}
		for _, id := range v.Plugins() {
			names := v.Names(id)
			if CheckNames(names) != nil {
				t.Fatalf("%s: invalid names %q admitted", id, names)
			}
			for _, n := range names {
				if s, _ := v.Get(id, n); len(s) > MaxValueBytes {
					t.Fatalf("%s.%s over the bound", id, n)
				}
			}
		}
	})
}
