package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// The operator's plugin values (PROTOCOL section 8.4) as a user meets
// them: a config file naming a secret file and an environment variable,
// plugins built from testdata/fixtures/configured that read them, and
// every output of the broker scanned for the secret bytes.

const (
	cfgFileSecret  = "cfg-file-secret-2b7d91e4a0f3"
	cfgEnvSecret   = "cfg-env-secret-83c5f06a1d77"
	cfgPlainSecret = "cfg-plain-secret-5e09b2c7f4aa"
	cfgRotated     = "cfg-rotated-secret-c41f8a6d02"
	cfgEnvVar      = "CFG_BACKUP_KEY"
)

// cfgWorld is a key file, a config file and a plugins folder: cfgcmd
// (the command build) and cfgreactor (the reactor build) declare
// api_key, backup_key, region and unset_name; snoop declares nothing,
// although the operator set api_key for it too.
type cfgWorld struct {
	plugins, config, key string
	env                  []string
	bounds               wire.Bounds
}

var cfgSecrets = []string{cfgFileSecret, cfgEnvSecret, cfgPlainSecret, cfgRotated, testToken}

func newCfgWorld(t *testing.T) *cfgWorld {
	t.Helper()
	dir := t.TempDir()
	w := &cfgWorld{plugins: filepath.Join(dir, "plugins"), config: filepath.Join(dir, "airlock.yaml"), key: filepath.Join(dir, "weather.key"),
		env:    []string{cfgEnvVar + "=" + cfgEnvSecret},
		bounds: wire.Bounds{TimeoutMs: 60000, MemoryMiB: 64, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}}
	must(t, os.Mkdir(w.plugins, 0o700))
	must(t, os.WriteFile(w.key, []byte(cfgFileSecret+"\n"), 0o600))
	values := fmt.Sprintf("{api_key: {file: %s}, backup_key: {env: %s}, region: %s}", w.key, cfgEnvVar, cfgPlainSecret)
	must(t, os.WriteFile(w.config, []byte(fmt.Sprintf("plugin_config:\n  cfgcmd: %s\n  cfgreactor: %s\n  snoop: {api_key: {file: %s}}\n",
		values, values, w.key)), 0o600))
	declared := []string{"api_key", "backup_key", "region", "unset_name"}
	for _, p := range []struct {
		id, module string
		config     []string
	}{{"cfgcmd", "configured.wasm", declared}, {"cfgreactor", "configured-reactor.wasm", declared}, {"snoop", "configured-reactor.wasm", nil}} {
		schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
		m := plugins.Manifest{ID: p.id, Version: "1.0.0", Module: p.module, Bounds: w.bounds, Config: p.config,
			Tools: []wire.Tool{{Name: "derive", InputSchema: schema}, {Name: "leak", InputSchema: schema}}}
		must(t, plugins.WriteFolder(w.plugins, m, testkit.Fixture(t, p.module)))
	}
	return w
}

func (w *cfgWorld) serveArgs(t *testing.T) []string {
	return []string{"--config", w.config, "--plugins", w.plugins, "--no-builtin", "--log-level", "debug", "--data", t.TempDir()}
}

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// cfgOutputs collects everything a test saw, to be scanned at the end.
type cfgOutputs []string

func (o *cfgOutputs) add(what, s string) { *o = append(*o, what+":\n"+s) }

// scan fails the test for each secret found in what was collected.
func (o cfgOutputs) scan(t *testing.T) {
	t.Helper()
	for _, out := range o {
		what, _, _ := strings.Cut(out, ":\n")
		for _, s := range cfgSecrets {
			if strings.Contains(out, s) {
				t.Errorf("a secret (%d bytes) appears in %s", len(s), what)
			}
		}
	}
}

// cfgCall posts one call to descriptor id and returns the answer and its
// raw body.
func cfgCall(t *testing.T, p *proc, w *cfgWorld, id, tool, args string) (wire.Answer, string) {
	t.Helper()
	bounds, _ := json.Marshal(w.bounds)
	body := fmt.Sprintf(`{"v":1,"callId":"c-%s","tool":%q,"descriptorId":%q,"args":%s,"boundsEcho":%s}`, id, tool, id, args, bounds)
	_, data, _ := p.do("POST", "/v1/calls", map[string]string{"X-Tensorviz-Token": testToken}, []byte(body))
	a, err := wire.ParseAnswer(data)
	if err != nil {
		t.Fatalf("%s %s: not an answer: %v\n%s", id, tool, err, data)
	}
	return a, string(data)
}

type cfgDerived struct {
	Found  bool   `json:"found"`
	Length int    `json:"length"`
	SHA256 string `json:"sha256"`
	Value  string `json:"value"`
}

func observedOf(t *testing.T, a wire.Answer) cfgDerived {
	t.Helper()
	var d cfgDerived
	if !a.OK || json.Unmarshal(a.Observed, &d) != nil {
		t.Fatalf("want ok, got %+v", a)
	}
	return d
}

// TestPluginConfigNeverLeaks is the check: values from a file,
// the environment and the config file reach the plugins that declare
// them (proved by a length and a hash), never a plugin that does not,
// and never stdout, the log, /metrics, /v1/tools, /v1/plugins, `airlock
// tools` (text and --json, offline and against the broker) or any
// answer, refusals included. SIGHUP then takes a rotated secret file.
func TestPluginConfigNeverLeaks(t *testing.T) {
	t.Parallel()
	w := newCfgWorld(t)
	p := startServe(t, procOptions{Args: w.serveArgs(t), Env: append(tokenEnv(), w.env...), Secrets: cfgSecrets})
	var seen cfgOutputs

	for _, id := range []string{"cfgcmd", "cfgreactor"} {
		for name, want := range map[string]string{"api_key": cfgFileSecret, "backup_key": cfgEnvSecret, "region": cfgPlainSecret} {
			a, body := cfgCall(t, p, w, id, "derive", `{"name":"`+name+`"}`)
			seen.add(id+" derive "+name, body)
			if d := observedOf(t, a); !d.Found || d.Length != len(want) || d.SHA256 != hexSHA256(want) {
				t.Errorf("%s derive %s: %+v", id, name, d)
			}
		}
		a, body := cfgCall(t, p, w, id, "derive", `{"name":"unset_name"}`)
		seen.add(id+" derive unset_name", body)
		if d := observedOf(t, a); d.Found {
			t.Errorf("%s: a declared name the operator did not set was found: %+v", id, d)
		}
		// The attack: another case of a declared name is another name.
		a, body = cfgCall(t, p, w, id, "leak", `{"name":"API_KEY"}`)
		seen.add(id+" leak API_KEY", body)
		if d := observedOf(t, a); d.Found || d.Value != "" {
			t.Errorf("%s read an undeclared name: %+v", id, d)
		}
		// Refusals carry no value either.
		_, body = cfgCall(t, p, w, id, "derive", `{}`)
		seen.add(id+" args-invalid", body)
	}
	// snoop declares nothing: the value the operator set for it stays out
	// of reach.
	for _, name := range []string{"api_key", "backup_key", "region"} {
		a, body := cfgCall(t, p, w, "snoop", "leak", `{"name":"`+name+`"}`)
		seen.add("snoop leak "+name, body)
		if d := observedOf(t, a); d.Found || d.Value != "" {
			t.Errorf("snoop read %s: %+v", name, d)
		}
	}
	p.waitStderr(`"msg":"guest asked for a config name plugin.json does not declare; answered not found"`)
	p.waitStderr(`"name":"API_KEY"`)
	p.waitStderr(`"plugin":"cfgcmd","names":["unset_name"]`)
	p.waitStderr(`"plugin":"snoop","names":["api_key"]`)

	for _, path := range []string{"/v1/tools", "/v1/plugins", "/metrics"} {
		code, body, _ := p.do("GET", path, map[string]string{"X-Tensorviz-Token": testToken}, nil)
		if code != 200 {
			t.Errorf("GET %s: %d", path, code)
		}
		seen.add(path, string(body))
	}
	env := append(tokenEnv(), w.env...)
	for _, args := range [][]string{
		{"tools", "--broker", p.URL()}, {"tools", "--broker", p.URL(), "--json"},
		{"tools", "--plugins", w.plugins, "--config", w.config, "--no-builtin", "--data", t.TempDir()},
		{"tools", "--plugins", w.plugins, "--config", w.config, "--no-builtin", "--data", t.TempDir(), "--json"},
	} {
		code, out, errOut := runCLI(t, env, args...)
		if code != 0 || !strings.Contains(out, "cfgreactor") {
			t.Errorf("airlock %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		seen.add(fmt.Sprintf("airlock %v stdout", args), out)
		seen.add(fmt.Sprintf("airlock %v stderr", args), errOut)
	}

	// SIGHUP re-reads the file: the next call, on the pooled reactor
	// instance too, derives from the rotated secret.
	must(t, os.WriteFile(w.key, []byte(cfgRotated+"\n"), 0o600))
	must(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.waitStderr(`"msg":"plugin config reloaded","plugins":3`)
	for _, id := range []string{"cfgcmd", "cfgreactor"} {
		a, body := cfgCall(t, p, w, id, "derive", `{"name":"api_key"}`)
		seen.add(id+" derive after SIGHUP", body)
		if d := observedOf(t, a); d.SHA256 != hexSHA256(cfgRotated) {
			t.Errorf("%s after SIGHUP: %+v", id, d)
		}
	}

	p.Stop()
	if !strings.Contains(p.Stderr(), `"level":"DEBUG"`) {
		t.Fatal("the broker logged nothing at debug level; the scan would prove little")
	}
	seen.add("stdout", p.stdout.String())
	seen.add("stderr", p.Stderr())
	seen.scan(t)
}

// TestPluginConfigRefusedAtStart: a value that cannot be read stops
// `airlock serve` before it listens, exit 2, with one line naming the
// value's path and never a value; a plugin.json whose "config" breaks
// the rules is refused admission, said by `airlock tools`.
func TestPluginConfigRefusedAtStart(t *testing.T) {
	t.Parallel()
	w := newCfgWorld(t)
	must(t, os.Chmod(w.key, 0o640))
	code, out, errOut := runCLI(t, append(tokenEnv(), w.env...), append([]string{"serve", "--listen", "127.0.0.1:0"}, w.serveArgs(t)...)...)
	want := "airlock serve: config: plugin_config.cfgcmd.api_key: file " + w.key + " is readable by group or others; chmod 600 it\n"
	if code != exitcode.Usage || out != "" || errOut != want {
		t.Errorf("group-readable key: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	must(t, os.Chmod(w.key, 0o600))
	code, _, errOut = runCLI(t, tokenEnv(), append([]string{"serve", "--listen", "127.0.0.1:0"}, w.serveArgs(t)...)...)
	if want := "airlock serve: config: plugin_config.cfgcmd.backup_key: environment variable " + cfgEnvVar + " is not set\n"; code != exitcode.Usage || errOut != want {
		t.Errorf("unset variable: exit %d, stderr %q; want %q", code, errOut, want)
	}

	m := plugins.Manifest{ID: "folded", Version: "1.0.0", Module: "configured.wasm", Bounds: w.bounds, Config: []string{"api_key", "API_KEY"},
		Tools: []wire.Tool{{Name: "derive", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	must(t, plugins.WriteFolder(w.plugins, m, testkit.Fixture(t, "configured.wasm")))
	code, out, errOut = runCLI(t, w.env, "tools", "--plugins", w.plugins, "--config", w.config, "--no-builtin", "--data", t.TempDir(), "--json")
	if code != exitcode.Refused || !strings.Contains(out, "descriptor-invalid") || !strings.Contains(out, `config: \"api_key\" and \"API_KEY\" are the same name`) {
		t.Errorf("folded config names: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range cfgSecrets {
		if strings.Contains(out+errOut, s) {
			t.Errorf("a secret (%d bytes) in airlock tools' output", len(s))
		}
	}
}

// TestPluginConfigMCPEmbedded: `airlock mcp` without --broker gives its
// embedded broker's plugins their values.
func TestPluginConfigMCPEmbedded(t *testing.T) {
	t.Parallel()
	w := newCfgWorld(t)
	c := startMCP(t, w.env, "--config", w.config, "--plugins", w.plugins, "--no-builtin", "--log-level", "debug")
	res := c.Call(t, "cfgreactor.derive", map[string]any{"name": "backup_key"})
	text := mcptest.Text(res)
	var d cfgDerived
	if res.IsError || json.Unmarshal([]byte(text), &d) != nil || d.SHA256 != hexSHA256(cfgEnvSecret) {
		t.Fatalf("derive over MCP: %+v %s", res, text)
	}
	res = c.Call(t, "snoop.leak", map[string]any{"name": "api_key"})
	if text := mcptest.Text(res); res.IsError || !strings.Contains(text, `"found":false`) {
		t.Fatalf("leak over MCP: %s", text)
	}
	for _, s := range cfgSecrets {
		if strings.Contains(c.stderr.String(), s) {
			t.Errorf("a secret (%d bytes) in airlock mcp's log", len(s))
		}
	}
}

// TestPluginConfigEnv: a paired environment reads its own config file's
// values for its own plugins; the broker never holds them.
func TestPluginConfigEnv(t *testing.T) {
	t.Parallel()
	w := newCfgWorld(t)
	cw := newChanWorld(t)
	bearer := cw.pair("lab")
	start(t, []string{"env", "--broker", cw.channelURL(), "--config", w.config, "--plugins", w.plugins, "--data", t.TempDir(), "--log-level", "debug"},
		procOptions{Env: append([]string{"AIRLOCK_BEARER=" + bearer}, w.env...), Secrets: append([]string{bearer}, cfgSecrets...)})
	for _, s := range cfgSecrets {
		cw.broker.AddSecret(s)
	}
	var a wire.Answer
	testkit.Eventually(t, "cfgreactor to answer through the channel", func() bool {
		a = cw.call("c1", "cfgreactor", w.bounds, "derive", `{"name":"api_key"}`)
		return a.OK
	})
	if d := observedOf(t, a); d.SHA256 != hexSHA256(cfgFileSecret) {
		t.Fatalf("derive through the environment: %+v", d)
	}
}
