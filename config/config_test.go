package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func load(t *testing.T, src Sources) *Config {
	t.Helper()
	c, err := Load(src)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := load(t, Sources{})
	if c.Listen != "127.0.0.1:7420" || c.Local.TombstoneRetentionSeconds != 3600 || c.Channel.HelloBoundMs != 5000 ||
		!c.Channel.LoopbackAuth || !c.Local.SourceProposals || c.Channel.GraceMs != 1000 || c.Local.MaxFrameBytes != 16<<20 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestSeedAliases(t *testing.T) {
	c := load(t, Sources{Environ: []string{
		"VOICEBOX_HELLO_BOUND_MS=250",
		"VOICEBOX_LOOPBACK_AUTH=1",
		"LOCAL_BROWSER_TOMBSTONE_RETENTION_SECONDS=7",
		"TENSORVIZ_LOCAL_TOKEN=not-a-setting",
	}})
	if c.Channel.HelloBoundMs != 250 || !c.Channel.LoopbackAuth || c.Local.TombstoneRetentionSeconds != 7 {
		t.Errorf("aliases not applied: %+v %+v", c.Channel, c.Local)
	}
	for _, line := range c.Dump() {
		if strings.Contains(line, "not-a-setting") {
			t.Errorf("the token reached the config: %s", line)
		}
	}
}

// TestViewKeyOffIsExplicit: the view key is required unless
// AIRLOCK_LOCAL_VIEW_KEY says 0.
func TestViewKeyOffIsExplicit(t *testing.T) {
	for env, want := range map[string]bool{"": true, "AIRLOCK_LOCAL_VIEW_KEY=0": false, "AIRLOCK_LOCAL_VIEW_KEY=false": false, "AIRLOCK_LOCAL_VIEW_KEY=1": true} {
		var environ []string
		if env != "" {
			environ = []string{env}
		}
		if got := load(t, Sources{Environ: environ}).Local.ViewKey; got != want {
			t.Errorf("%q: view_key %v, want %v", env, got, want)
		}
	}
}

// TestLoopbackAuthOffIsExplicit: the page cookie check is on unless
// VOICEBOX_LOOPBACK_AUTH (or its AIRLOCK_ name) says 0.
func TestLoopbackAuthOffIsExplicit(t *testing.T) {
	for env, want := range map[string]bool{"": true, "VOICEBOX_LOOPBACK_AUTH=0": false, "AIRLOCK_CHANNEL_LOOPBACK_AUTH=false": false, "VOICEBOX_LOOPBACK_AUTH=1": true} {
		var environ []string
		if env != "" {
			environ = []string{env}
		}
		if got := load(t, Sources{Environ: environ}).Channel.LoopbackAuth; got != want {
			t.Errorf("%q: loopback_auth %v, want %v", env, got, want)
		}
	}
}

func TestAirlockNameWinsOverAlias(t *testing.T) {
	c := load(t, Sources{Environ: []string{"VOICEBOX_HELLO_BOUND_MS=250", "AIRLOCK_CHANNEL_HELLO_BOUND_MS=900"}})
	if c.Channel.HelloBoundMs != 900 {
		t.Errorf("hello bound %d, want the AIRLOCK_ value 900", c.Channel.HelloBoundMs)
	}
}

func TestLayers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "airlock.yaml")
	yaml := "listen: 127.0.0.1:1000\nlog_level: debug\nroots:\n  notes: /srv/notes\n  docs: /srv/docs\nexec:\n  max_concurrent: 3\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c := load(t, Sources{
		File:    file,
		Environ: []string{"AIRLOCK_LISTEN=127.0.0.1:2000", "AIRLOCK_EXEC_MAX_CONCURRENT=5"},
		Flags:   map[string]any{"listen": "127.0.0.1:3000"},
		Roots:   map[string]string{"notes": "/flag/notes"},
	})
	if c.Listen != "127.0.0.1:3000" {
		t.Errorf("flag did not win: %s", c.Listen)
	}
	if c.Exec.MaxConcurrent != 5 {
		t.Errorf("environment did not win over the file: %d", c.Exec.MaxConcurrent)
	}
	if c.LogLevel != "debug" {
		t.Errorf("file value lost: %s", c.LogLevel)
	}
	if c.Roots["notes"] != "/flag/notes" || c.Roots["docs"] != "/srv/docs" {
		t.Errorf("roots: %v", c.Roots)
	}
}

func TestErrorsAreOneClearLine(t *testing.T) {
	dir := t.TempDir()
	badKey := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badKey, []byte("listne: x\n"), 0o644)
	badNested := filepath.Join(dir, "nested.yaml")
	os.WriteFile(badNested, []byte("zzz: 1\nmcp:\n  foo: 1\n  max_sessions: 3\nroots:\n  any_name: /srv\n"), 0o644)
	badType := filepath.Join(dir, "type.yaml")
	os.WriteFile(badType, []byte("exec:\n  max_concurrent: lots\n"), 0o644)
	badSection := filepath.Join(dir, "section.yaml")
	os.WriteFile(badSection, []byte("log_level: info\nhttp: 5\nlocal:\n  view_key: maybe\n"), 0o644)
	badNearby := filepath.Join(dir, "nearby.yaml")
	os.WriteFile(badNearby, []byte("exec:\n  max_concurent: 3\n"), 0o644)
	cases := map[string]struct {
		src  Sources
		want string
	}{
		"unknown file key": {Sources{File: badKey}, "config: " + badKey + `:1: unknown key "listne"; did you mean "listen"?`},
		"unknown nested": {Sources{File: badNested}, "config: " + badNested + `:1: unknown key "zzz"; ` +
			badNested + `:3: unknown key "mcp.foo"`},
		"unknown, nearby":   {Sources{File: badNearby}, badNearby + `:2: unknown key "exec.max_concurent"; did you mean "exec.max_concurrent"?`},
		"wrong type":        {Sources{File: badType}, "config: " + badType + `:2: exec.max_concurrent: want a whole number, got "lots"`},
		"not a section":     {Sources{File: badSection}, badSection + `:2: http: want a section of settings (key: value lines under it), got "5"`},
		"wrong type, env":   {Sources{File: badType, Environ: []string{"AIRLOCK_EXEC_MAX_CONCURRENT=many"}}, `config: AIRLOCK_EXEC_MAX_CONCURRENT: exec.max_concurrent: want a whole number, got "many"`},
		"wrong type, alias": {Sources{Environ: []string{"VOICEBOX_LOOPBACK_AUTH=perhaps"}}, `VOICEBOX_LOOPBACK_AUTH: channel.loopback_auth: want true or false, got "perhaps"`},
		"missing file":      {Sources{File: filepath.Join(dir, "none.yaml")}, "none.yaml"},
		"bad listen":        {Sources{Flags: map[string]any{"listen": "localhost"}}, "listen"},
		"no host":           {Sources{Flags: map[string]any{"listen": ":7420"}}, "explicit host"},
		"zero":              {Sources{Environ: []string{"AIRLOCK_LOCAL_OUTBOUND_QUEUE=0"}}, "local.outbound_queue"},
		"negative":          {Sources{Environ: []string{"VOICEBOX_HELLO_BOUND_MS=-5"}}, "channel.hello_bound_ms"},
		"bad level":         {Sources{Flags: map[string]any{"log_level": "chatty"}}, "log_level"},
		"bad metrics addr":  {Sources{Flags: map[string]any{"metrics_listen": "nope"}}, "metrics_listen"},
		"empty root dir":    {Sources{Roots: map[string]string{"notes": ""}}, "roots"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(c.src)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q should be one line naming %q", msg, c.want)
			}
		})
	}
}

// TestTypeErrorNeverShowsPluginValues: a setting's value is shown in
// its type error, a plugin value never, wherever it sits in the file.
func TestTypeErrorNeverShowsPluginValues(t *testing.T) {
	const secretValue = "sk-plugin-value-5e1d"
	file := filepath.Join(t.TempDir(), "c.yaml")
	for _, doc := range []string{
		"plugin_config:\n  notes:\n    key: " + secretValue + "\nexec:\n  max_concurrent: lots\n",
		"plugin_config:\n  notes:\n    key: [" + secretValue + "]\n",
		"plugin_config:\n  notes:\n    keyy: {fil: " + secretValue + "}\n",
		"plugin_config: " + secretValue + "\n",
	} {
		os.WriteFile(file, []byte(doc), 0o600)
		_, err := Load(Sources{File: file})
		if err == nil || strings.Contains(err.Error(), secretValue) {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// TestYAMLLine: the line of a key at a dotted path, 0 where there is none.
func TestYAMLLine(t *testing.T) {
	doc := []byte("listen: x\n# a comment\nexec:\n  pool_size: 2\n  max_concurrent:\n    deeper: 1\n")
	for path, want := range map[string]int{
		"listen": 1, "exec": 3, "exec.pool_size": 4, "exec.max_concurrent.deeper": 6, "exec.none": 0, "listen.x": 0, "": 0,
	} {
		if got := yamlLine(doc, strings.Split(path, ".")); got != want {
			t.Errorf("yamlLine(%q) = %d, want %d", path, got, want)
		}
	}
	if yamlLine([]byte(": ["), []string{"a"}) != 0 {
		t.Error("a line from a document that does not parse")
	}
}

// TestUnknownVariableIsAWarning: an AIRLOCK_* variable that names no
// setting does not stop the broker; it is said, with the setting meant
// when one is close. A known setting's bad value stays an error.
func TestUnknownVariableIsAWarning(t *testing.T) {
	c, err := Load(Sources{Environ: []string{"AIRLOCK_LISTNE=127.0.0.1:0", "AIRLOCK_BIN=/usr/local/bin/airlock", "AIRLOCK_EXEC_POOLSIZE=9"}})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	want := []string{
		"environment variable AIRLOCK_BIN is not a setting and is ignored",
		"environment variable AIRLOCK_EXEC_POOLSIZE is not a setting and is ignored; did you mean AIRLOCK_EXEC_POOL_SIZE?",
		"environment variable AIRLOCK_LISTNE is not a setting and is ignored; did you mean AIRLOCK_LISTEN?",
	}
	if !slices.Equal(c.Warnings, want) {
		t.Errorf("warnings\n%q\nwant\n%q", c.Warnings, want)
	}
	if c.Listen != "127.0.0.1:7420" || c.Exec.PoolSize != 4 {
		t.Errorf("an unknown variable changed a setting: listen %q, pool %d", c.Listen, c.Exec.PoolSize)
	}
	if _, err := Load(Sources{Environ: []string{"AIRLOCK_BIN=x", "AIRLOCK_EXEC_POOL_SIZE=lots"}}); err == nil || !strings.Contains(err.Error(), "pool_size") {
		t.Errorf("a bad value of a known setting: %v, want an error naming exec.pool_size", err)
	}
	if c, _ := Load(Sources{}); len(c.Warnings) != 0 {
		t.Errorf("warnings with no variables: %q", c.Warnings)
	}
}

func TestSecretVariablesAreNotSettings(t *testing.T) {
	if _, err := Load(Sources{Environ: []string{"AIRLOCK_LOCAL_TOKEN=x", "AIRLOCK_BEARER=y"}}); err != nil {
		t.Errorf("secret variables refused as unknown settings: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "127.9.9.9:1": true,
		"0.0.0.0:1": false, "10.0.0.1:1": false, "[::]:1": false, "example.com:1": false, "nonsense": false,
	} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}

func TestEveryKeyHasAnEnvironmentName(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings {
		if seen[s.Env()] {
			t.Errorf("two keys map to %s", s.Env())
		}
		seen[s.Env()] = true
		if s.Help == "" {
			t.Errorf("%s has no help text", s.Key)
		}
	}
}

func TestHTTPBoundsDefaultsAndValidation(t *testing.T) {
	c := load(t, Sources{})
	if c.HTTP.MaxConnections != 4096 || c.HTTP.HeaderTimeoutMs != 10000 || c.HTTP.BodyTimeoutMs != 10000 || c.HTTP.IdleTimeoutMs != 30000 {
		t.Errorf("http defaults: %+v", c.HTTP)
	}
	c = load(t, Sources{Environ: []string{"AIRLOCK_HTTP_MAX_CONNECTIONS=64", "AIRLOCK_HTTP_BODY_TIMEOUT_MS=2000"}})
	if c.HTTP.MaxConnections != 64 || c.HTTP.BodyTimeoutMs != 2000 {
		t.Errorf("http from the environment: %+v", c.HTTP)
	}
	for _, key := range []string{"max_connections", "header_timeout_ms", "body_timeout_ms", "idle_timeout_ms"} {
		_, err := Load(Sources{Flags: map[string]any{"http." + key: 0}})
		if err == nil || !strings.Contains(err.Error(), "http."+key) {
			t.Errorf("http.%s = 0: %v, want a refusal naming the key", key, err)
		}
	}
}

// TestPluginConfig: plugin_config is resolved at Load (file and
// environment read then), never reaches Dump or %v, and errors name the
// path without the value.
func TestPluginConfig(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "weather.key")
	if err := os.WriteFile(key, []byte("file-secret-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "airlock.yaml")
	yaml := "plugins: /srv/plugins\nplugin_config:\n  weather:\n    region: plain-secret-2\n    api_key: {file: " + key + "}\n    backup: {env: AIRLOCK_WEATHER_BACKUP}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// An AIRLOCK_ variable a value names is not an unknown setting.
	c := load(t, Sources{File: file, Environ: []string{"AIRLOCK_WEATHER_BACKUP=env-secret-3"}})
	if c.Plugins != "/srv/plugins" {
		t.Errorf("plugins %q: the folder key is unchanged", c.Plugins)
	}
	for name, want := range map[string]string{"region": "plain-secret-2", "api_key": "file-secret-1", "backup": "env-secret-3"} {
		if got, ok := c.PluginConfig.Get("weather", name); !ok || got != want {
			t.Errorf("%s = %q %v", name, got, ok)
		}
	}
	printed := strings.Join(c.Dump(), "\n") + fmt.Sprintf("%v %+v", c, *c)
	for _, v := range []string{"file-secret-1", "plain-secret-2", "env-secret-3"} {
		if strings.Contains(printed, v) {
			t.Errorf("%s printed:\n%s", v, printed)
		}
	}
	if !strings.Contains(printed, "plugin_config.weather.api_key=(redacted)") {
		t.Errorf("Dump does not list the names:\n%s", printed)
	}

	// SIGHUP's re-read: a rotated file and a changed section are seen.
	if err := os.WriteFile(key, []byte("file-secret-rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(yaml, "plain-secret-2", "plain-changed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := c.ReadPluginConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Get("weather", "api_key"); got != "file-secret-rotated" {
		t.Errorf("rotated file: %q", got)
	}
	if got, _ := v.Get("weather", "region"); got != "plain-changed" {
		t.Errorf("changed value: %q", got)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadPluginConfig(); err == nil || err.Error() != "config: plugin_config.weather.api_key: file "+key+" is readable by group or others; chmod 600 it" {
		t.Errorf("re-read of an open file: %v", err)
	}
	_, err = Load(Sources{File: file, Environ: []string{"AIRLOCK_WEATHER_BACKUP=env-secret-3"}})
	if err == nil || !strings.HasPrefix(err.Error(), "config: plugin_config.weather.api_key: file ") || strings.Contains(err.Error(), "rotated") {
		t.Errorf("Load of an open file: %v", err)
	}
	_, err = Load(Sources{File: file})
	if err == nil || !strings.Contains(err.Error(), "plugin_config.weather") {
		t.Errorf("Load with the variable unset: %v", err)
	}
	if v, err := load(t, Sources{}).ReadPluginConfig(); err != nil || len(v.Plugins()) != 0 {
		t.Errorf("no file: %v %v", v, err)
	}
}

// TestStandaloneProfile: standalone turns local.source_proposals off, and
// the dump says so; a layer that turns it on, or an address other than
// 127.0.0.1 for either listener, is refused; a layer that sets it false,
// or leaves it, is fine. Without standalone nothing changes.
func TestStandaloneProfile(t *testing.T) {
	on := map[string]any{"standalone": "true"}
	c := load(t, Sources{Flags: on})
	if !c.Standalone || c.Local.SourceProposals {
		t.Fatalf("standalone: %v, source proposals %v", c.Standalone, c.Local.SourceProposals)
	}
	dump := strings.Join(c.Dump(), "\n")
	if !strings.Contains(dump, "local.source_proposals=false") || !strings.Contains(dump, "standalone=true") {
		t.Errorf("the dump does not show the profile:\n%s", dump)
	}
	if c := load(t, Sources{Environ: []string{"AIRLOCK_STANDALONE=1", "AIRLOCK_LOCAL_SOURCE_PROPOSALS=false"}}); c.Local.SourceProposals {
		t.Error("source proposals on under standalone")
	}
	file := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(file, []byte("standalone: true\nlocal:\n  source_proposals: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]Sources{
		"proposals on, file":  {File: file},
		"proposals on, env":   {Flags: on, Environ: []string{"AIRLOCK_LOCAL_SOURCE_PROPOSALS=true"}},
		"public listen":       {Flags: map[string]any{"standalone": "true", "listen": "0.0.0.0:7420"}},
		"ipv6 loopback":       {Flags: map[string]any{"standalone": "true", "listen": "[::1]:7420"}},
		"localhost":           {Environ: []string{"AIRLOCK_STANDALONE=true", "AIRLOCK_LISTEN=localhost:7420"}},
		"public metrics":      {Flags: map[string]any{"standalone": "true", "metrics_listen": "0.0.0.0:9090"}},
		"loopback v6 metrics": {Flags: map[string]any{"standalone": "true", "metrics_listen": "[::1]:9090"}},
	} {
		if _, err := Load(src); err == nil || !strings.Contains(err.Error(), "standalone") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c := load(t, Sources{Flags: map[string]any{"listen": "0.0.0.0:7420", "metrics_listen": "[::1]:9090"}}); c.Standalone || !c.Local.SourceProposals {
		t.Errorf("without standalone: %+v", c)
	}
}
