package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// devCase is one run of the binary and what it must do: the exit code
// and, on stderr, exactly one line holding want.
type devCase struct {
	args []string
	exit int
	want string
}

func (c devCase) check(t *testing.T, env []string, dir string) {
	t.Helper()
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "$DIR", dir)
	}
	code, stdout, stderr := runCLI(t, env, args...)
	if code != c.exit {
		t.Errorf("airlock %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, c.exit, stdout, stderr)
		return
	}
	if lines := scanLines(strings.TrimSpace(stderr)); len(lines) != 1 || !strings.Contains(lines[0], strings.ReplaceAll(c.want, "$DIR", dir)) {
		t.Errorf("airlock %s: stderr is not one line naming %q:\n%s", strings.Join(args, " "), c.want, stderr)
	}
}

// scaffold writes a project with the binary; edit changes its files.
func scaffold(t *testing.T, edits map[string][2]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "greet")
	if code, _, stderr := runCLI(t, nil, "new", "greet", "--dir", dir); code != 0 {
		t.Fatalf("airlock new: %d %s", code, stderr)
	}
	for file, e := range edits {
		path := filepath.Join(dir, file)
		data, _ := os.ReadFile(path)
		if !bytes.Contains(data, []byte(e[0])) {
			t.Fatalf("%s lacks %q", file, e[0])
		}
		os.WriteFile(path, bytes.Replace(data, []byte(e[0]), []byte(e[1]), 1), 0o644)
	}
	return dir
}

// TestNewRefusals: every refusal of `airlock new`, one line each, exit 2.
func TestNewRefusals(t *testing.T) {
	t.Parallel()
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	for _, c := range []devCase{
		{[]string{"new"}, exitcode.Usage, "airlock new: missing NAME"},
		{[]string{"new", "Greet"}, exitcode.Usage, `airlock new: "Greet" is not a plugin id`},
		{[]string{"new", "a/b"}, exitcode.Usage, `"a/b" is not a plugin id`},
		{[]string{"new", "greet", "extra"}, exitcode.Usage, "airlock new: 2 arguments, want NAME"},
		{[]string{"new", "greet", "--bogus"}, exitcode.Usage, "airlock new: unknown flag: --bogus"},
		{[]string{"new", "greet", "--dir", "$DIR"}, exitcode.Usage, "airlock new: $DIR exists and is not empty"},
		{[]string{"new", "greet", "--dir", "$DIR/x"}, exitcode.Usage, "airlock new: --dir $DIR/x: not a folder"},
	} {
		c.check(t, nil, full)
	}
	// The cwd default: ./NAME.
	work := t.TempDir()
	cmd := filepath.Join(work, "greet")
	if code, stdout, stderr := runCLI(t, nil, "new", "greet", "--dir", cmd); code != 0 || !strings.Contains(stdout, "next: airlock build") {
		t.Fatalf("%d %s %s", code, stdout, stderr)
	}
}

// TestBuildRefusals: usage (2), a plugin a broker would refuse (3), a
// build that fails (1); one line each, and nothing written.
func TestBuildRefusals(t *testing.T) {
	t.Parallel()
	bad := scaffold(t, map[string][2]string{"plugin.json": {`"memoryMiB": 32`, `"memoryMiB": 0`}})
	broken := scaffold(t, map[string][2]string{"main.go": {"func main()", "func main() { undefined() }\nfunc old()"}})
	fresh := scaffold(t, nil)
	noGo := []string{"PATH=" + t.TempDir()}
	for _, c := range []struct {
		devCase
		dir string
		env []string
	}{
		{devCase{[]string{"build"}, exitcode.Usage, "airlock build: missing DIR"}, "", nil},
		{devCase{[]string{"build", "$DIR/absent"}, exitcode.Usage, "airlock build: $DIR/absent: no such folder"}, t.TempDir(), nil},
		{devCase{[]string{"build", "$DIR"}, exitcode.Usage, "airlock build: $DIR has no plugin.json: not a plugin project"}, t.TempDir(), nil},
		{devCase{[]string{"build", "$DIR", "$DIR"}, exitcode.Usage, "airlock build: 2 arguments, want DIR"}, fresh, nil},
		{devCase{[]string{"build", "$DIR"}, exitcode.Refused, "airlock build: descriptor-invalid: $DIR/plugin.json: bounds.memoryMiB must be 1 to 4096"}, bad, nil},
		{devCase{[]string{"build", "$DIR", "--tinygo"}, exitcode.Failed, "airlock build: tinygo is not on PATH"}, fresh, noGo},
		{devCase{[]string{"build", "$DIR"}, exitcode.Failed, "airlock build: go is not on PATH"}, fresh, noGo},
	} {
		c.check(t, c.env, c.dir)
	}
	// The compiler's own output comes first; airlock's verdict is the
	// last line.
	code, _, stderr := runCLI(t, nil, "build", broken)
	lines := scanLines(strings.TrimSpace(stderr))
	if code != exitcode.Failed || !strings.Contains(stderr, "undefined: undefined") ||
		!strings.HasPrefix(lines[len(lines)-1], "airlock build: go build failed (exit status 1); its output is above") {
		t.Errorf("compile error: %d %s", code, stderr)
	}
	for _, dir := range []string{bad, broken, fresh} {
		if _, err := os.Stat(filepath.Join(dir, "greet.wasm")); err == nil {
			t.Errorf("%s: a module was written", dir)
		}
	}
}

// TestRunRefusals: usage (2) and a plugin that would not be admitted (3),
// one line each.
func TestRunRefusals(t *testing.T) {
	t.Parallel()
	fresh := scaffold(t, nil)
	for _, c := range []devCase{
		{[]string{"run"}, exitcode.Usage, "airlock run: missing DIR TOOL"},
		{[]string{"run", "$DIR"}, exitcode.Usage, "airlock run: missing TOOL"},
		{[]string{"run", "$DIR", "greet", "x"}, exitcode.Usage, "airlock run: 3 arguments, want DIR TOOL"},
		{[]string{"run", "$DIR", "greet", "--root", "nodir"}, exitcode.Usage, `airlock run: invalid argument "nodir" for "--root" flag: want NAME=DIR`},
		{[]string{"run", "$DIR", "greet", "--args", "@$DIR/absent.json"}, exitcode.Usage, "airlock run: --args @$DIR/absent.json: no such file"},
		{[]string{"run", "$DIR", "greet", "--args", "[1]"}, exitcode.Usage, "airlock run: --args must be one JSON object"},
		{[]string{"run", "$DIR", "greet", "--args", `{"a":1,"a":2}`}, exitcode.Usage, "airlock run: --args must be one JSON object"},
		{[]string{"run", "$DIR/absent", "greet"}, exitcode.Usage, "airlock run: $DIR/absent: no such folder"},
		{[]string{"run", "$DIR", "greet"}, exitcode.Refused, "airlock run: module-missing: module greet.wasm: "},
	} {
		c.check(t, nil, fresh)
	}
}

// TestRunRefusesUnmappedRoots: a built plugin whose root is not mapped is
// refused root-unmapped (3), naming the flag to map it; mapped, the call
// is made and its refusal printed (3), through the executors.
func TestRunRefusesUnmappedRoots(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "guest")
	os.MkdirAll(dir, 0o755)
	m := plugins.Manifest{ID: "guest", Version: "1.0.0", Module: "guest.wasm", SHA256: plugins.HashModule(testkit.Fixture(t, "guest.wasm")),
		Tools:  []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Bounds: wire.Bounds{TimeoutMs: 5000, MemoryMiB: 64, MaxOutputBytes: 1024, AllowedHosts: []string{}, Roots: []string{"notes"}}}
	data, _ := json.MarshalIndent(m, "", "  ")
	os.WriteFile(filepath.Join(dir, "plugin.json"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "guest.wasm"), testkit.Fixture(t, "guest.wasm"), 0o644)
	var cacheEnv []string // the run's warmed cache holds guest.wasm
	devCase{[]string{"run", dir, "echo"}, exitcode.Refused,
		`airlock run: root-unmapped: root "notes" is not mapped by the operator (map it with --root NAME=DIR)`}.check(t, cacheEnv, "")
	code, stdout, stderr := runCLI(t, cacheEnv, "run", dir, "nope", "--root", "notes="+t.TempDir())
	if code != exitcode.Refused || !strings.Contains(stdout, `"refused": "unknown-tool"`) {
		t.Errorf("unknown tool: %d %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, cacheEnv, "run", dir, "echo", "--root", "notes="+t.TempDir(), "--args", `{"hello":"world"}`)
	if code != exitcode.OK || !strings.Contains(stdout, `"ok": true`) {
		t.Errorf("echo: %d %s %s", code, stdout, stderr)
	}
}

// TestToolsJudgesOnlyThatFolder: `airlock tools --plugins DIR` on a
// healthy folder exits 0 without the bundled plugins, whose notes would
// be refused for want of a root; --builtin brings them in.
func TestToolsJudgesOnlyThatFolder(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 1000, MemoryMiB: 64, MaxOutputBytes: 1024, AllowedHosts: []string{}, Roots: []string{}}
	m := plugins.Manifest{ID: "guest", Version: "1.0.0", Module: "guest.wasm", Bounds: b,
		Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	if err := plugins.WriteFolder(plugDir, m, testkit.Fixture(t, "guest.wasm")); err != nil {
		t.Fatal(err)
	}
	data := []string{"--data", t.TempDir()}
	code, stdout, stderr := runCLI(t, nil, append([]string{"tools", "--plugins", plugDir}, data...)...)
	if code != exitcode.OK || !strings.Contains(stdout, "guest") || strings.Contains(stdout, "notes") {
		t.Errorf("healthy folder: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, nil, append([]string{"tools", "--plugins", plugDir, "--builtin"}, data...)...)
	if code != exitcode.Refused || !strings.Contains(stdout, "root-unmapped") {
		t.Errorf("--builtin without a notes root: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, nil, append([]string{"tools", "--plugins", plugDir, "--builtin", "--root", "notes=" + t.TempDir()}, data...)...)
	if code != exitcode.OK || !strings.Contains(stdout, "read_notes") || !strings.Contains(stdout, "fetch_url") {
		t.Errorf("--builtin with its root: exit %d\n%s", code, stdout)
	}
}
