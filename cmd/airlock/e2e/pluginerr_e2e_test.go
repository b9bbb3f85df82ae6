package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/plugins"
)

// typoManifest is a plugin.json whose bounds spell timeoutMs with a
// capital S, on line 9, column 5.
const typoManifest = `{
  "id": "typo",
  "version": "1.0.0",
  "module": "typo.wasm",
  "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
  "tools": [{"name": "read", "description": "x", "inputSchema": {"type": "object"}}],
  "bounds": {
    "memoryMiB": 64,
    "timeoutMS": 2000,
    "maxOutputBytes": 1024,
    "maxRequests": 0,
    "allowedHosts": [],
    "roots": []
  }
}
`

// typoWhere is what every report of typoManifest says: the file, the
// line and column, the key and the key meant.
const typoWhere = `typo/plugin.json:9:5: bounds: unknown key "timeoutMS"; did you mean "timeoutMs"?`

// TestPluginJSONRefusalSaysWhere: a plugin.json with a mistyped key is
// refused descriptor-invalid, and `airlock tools --plugins`, a running
// broker's /v1/plugins and log, and `airlock tools --broker` all name
// the file, the line and column, the key and the nearest allowed key; a
// missing comma names its place too.
func TestPluginJSONRefusalSaysWhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "typo"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "typo", plugins.ManifestName), []byte(typoManifest), 0o644))
	comma := strings.Replace(strings.Replace(typoManifest, `"typo"`, `"comma"`, 1), `"version": "1.0.0",`, `"version": "1.0.0"`, 1)
	must(t, os.MkdirAll(filepath.Join(dir, "comma"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "comma", plugins.ManifestName), []byte(comma), 0o644))
	const commaWhere = `comma/plugin.json:4:3: not valid JSON: expected "," or "}" after a member (a comma missing?)`

	code, out, errOut := runCLI(t, nil, "tools", "--plugins", dir, "--no-builtin", "--data", t.TempDir())
	if code != exitcode.Refused || !strings.Contains(out, typoWhere) || !strings.Contains(out, commaWhere) {
		t.Fatalf("airlock tools --plugins: exit %d, want %d naming\n  %s\n  %s\nstdout:\n%s\nstderr:\n%s", code, exitcode.Refused, typoWhere, commaWhere, out, errOut)
	}

	p := startServe(t, procOptions{Args: []string{"--plugins", dir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	status := pluginStatus(t, p)
	if s := status["typo"]; s.Admitted || s.Reason != plugins.ReasonDescriptorInvalid || !strings.Contains(s.Detail, typoWhere) {
		t.Errorf("/v1/plugins typo: %+v, want refused %s naming %s", s, plugins.ReasonDescriptorInvalid, typoWhere)
	}
	if s := status["comma"]; !strings.Contains(s.Detail, commaWhere) {
		t.Errorf("/v1/plugins comma: %+v, want %s", s, commaWhere)
	}
	logged := false
	for _, line := range scanLines(p.Stderr()) {
		var rec struct{ Msg, Plugin, Detail string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "plugin refused" && rec.Plugin == "typo" && strings.Contains(rec.Detail, typoWhere) {
			logged = true
		}
	}
	if !logged {
		t.Errorf("the broker's log has no refusal naming %s:\n%s", typoWhere, p.Stderr())
	}
	code, out, _ = runCLI(t, tokenEnv(), "tools", "--broker", p.URL())
	if code != exitcode.Refused || !strings.Contains(out, typoWhere) {
		t.Errorf("airlock tools --broker: exit %d, want %d naming %s:\n%s", code, exitcode.Refused, typoWhere, out)
	}
}

// TestConfigTypeErrorSaysWhere: a config file value of the wrong type
// is one line naming the file, its line, the key path, the type wanted
// and the value; an unknown key names the key meant.
func TestConfigTypeErrorSaysWhere(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ yaml, want string }{
		"wrong type":  {"log_level: info\nexec:\n  max_concurrent: lots\n", `c.yaml:3: exec.max_concurrent: want a whole number, got "lots"`},
		"unknown key": {"listne: 127.0.0.1:0\n", `c.yaml:1: unknown key "listne"; did you mean "listen"?`},
	} {
		file := filepath.Join(t.TempDir(), "c.yaml")
		must(t, os.WriteFile(file, []byte(c.yaml), 0o600))
		code, _, errOut := runCLI(t, nil, "tools", "--config", file, "--plugins", t.TempDir(), "--data", t.TempDir())
		if code != exitcode.Usage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, want %d and one line naming %s:\n%s", name, code, exitcode.Usage, c.want, errOut)
		}
	}
}
