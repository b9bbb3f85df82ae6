package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// TestREADMEQuickStarts follows the top README's marked examples in order,
// as one new user on one machine would: install airlock from the
// checkout, then run each quick start's commands as written, with the
// installed airlock and the test's Go toolchain on PATH, a private HOME,
// no network for Go (GOPROXY=off) and the suite's warmed compilation
// cache. What the test supplies is what the README assumes a user has: a
// plugins folder (~/airlock-plugins, one plugin), a notes folder
// (~/notes, the DIR of the SRE example) and a paired machine's tools
// (~/my-tools, one plugin). What it changes, and only that:
//   - a broker started with `&` listens on a port the system chooses, and
//     that address replaces 127.0.0.1:7420 in the block's later commands
//     (`load`, which relies on the default, is given --broker);
//   - `/path/to/notes` in the agent's configuration is ~/notes;
//   - load runs last 2 s, not 60 s.
//
// The operator's broker runs to the end, so the plugin author's install
// and the paired machine reach it; the SRE's broker is stopped at the end
// of its block. The demo and the test command are run by TestDemo and by
// CI itself; the extension author's npm install and the `@latest`
// install need the network and are not marked.
func TestREADMEQuickStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("installs airlock and compiles Go to wasip1")
	}
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	must(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	must(t, err)
	blocks := markedBlocks(t, "README.md", string(readme), "quickstart")
	steps := quickStartSteps()
	var names []string
	for _, b := range blocks {
		names = append(names, b.name)
	}
	if want := []string{"install", "operator", "agent", "sre", "plugin-author", "paired"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("README.md's quick starts are %q; the test follows %q", names, want)
	}
	q := newQuickWorld(t, root)
	for _, b := range blocks {
		q.block = b
		steps[b.name](t, q, b.body)
	}
}

// quickWorld is the one user's machine the quick starts run on.
type quickWorld struct {
	root, home, work, bin string
	env                   []string
	operator              *lineProc // the operator's broker, kept running
	operatorAddr          string
	block                 markedBlock
}

func newQuickWorld(t *testing.T, root string) *quickWorld {
	t.Helper()
	q := &quickWorld{root: root, work: t.TempDir(), bin: t.TempDir()}
	q.env = walkthroughEnv(t)
	for i, kv := range q.env {
		switch {
		case strings.HasPrefix(kv, "PATH="):
			q.env[i] = "PATH=" + q.bin + ":" + strings.SplitN(strings.TrimPrefix(kv, "PATH="), ":", 2)[1]
		case strings.HasPrefix(kv, "HOME="):
			q.home = strings.TrimPrefix(kv, "HOME=")
		}
	}
	q.env = append(q.env, "AIRLOCK_EXEC_CACHE_DIR="+cacheDir)
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	for _, d := range []string{"airlock-plugins", "my-tools", "notes"} {
		must(t, os.MkdirAll(filepath.Join(q.home, d), 0o700))
	}
	must(t, plugins.WriteFolder(filepath.Join(q.home, "airlock-plugins"), fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	must(t, plugins.WriteFolder(filepath.Join(q.home, "my-tools"), fxManifestOf("mine", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	must(t, os.WriteFile(filepath.Join(q.home, "notes", "welcome.md"), []byte("# Welcome\nfrom the quick start\n"), 0o600))
	return q
}

// lines are a block's commands, one per line and without their trailing
// comments; each must start with the prefix the test expects, so a
// changed README fails here first.
func (q *quickWorld) lines(t *testing.T, body string, prefixes ...string) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(prefixes) {
		t.Fatalf("README.md line %d, quick start %q: %d commands, the test knows %d:\n%s", q.block.line, q.block.name, len(lines), len(prefixes), body)
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(lines[i], p) {
			t.Fatalf("README.md line %d, quick start %q: command %d is %q, the test expects %q…", q.block.line, q.block.name, i+1, lines[i], p)
		}
	}
	return lines
}

// run runs one command in dir and checks its exit code and stdout.
func (q *quickWorld) run(t *testing.T, dir, line string, env []string, exit int, stdout ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, append(append([]string(nil), q.env...), env...)
	var out, errOut testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if code := exitCode(cmd.Run()); code != exit {
		t.Fatalf("quick start %q, %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", q.block.name, line, code, exit, tail(out.String(), 4000), tail(errOut.String(), 4000))
	}
	for _, want := range stdout {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("quick start %q, %s: stdout lacks %q:\n%s", q.block.name, line, want, tail(out.String(), 4000))
		}
	}
	return out.String()
}

func (q *quickWorld) token() string { return filepath.Join(q.work, "T") }

func quickStartSteps() map[string]func(*testing.T, *quickWorld, string) {
	return map[string]func(*testing.T, *quickWorld, string){
		"install":       quickInstall,
		"operator":      quickOperator,
		"agent":         quickAgent,
		"sre":           quickSRE,
		"plugin-author": quickPluginAuthor,
		"paired":        quickPaired,
	}
}

// quickInstall runs the install line from the checkout into a folder on
// PATH; under -race it builds with -race, so the suite's build is reused.
func quickInstall(t *testing.T, q *quickWorld, body string) {
	line := q.lines(t, body, "go install ./cmd/airlock")[0]
	env := []string{"GOBIN=" + q.bin}
	if raceEnabled {
		env = append(env, "GOFLAGS=-race")
	}
	q.run(t, q.root, line, env, 0)
	q.run(t, q.work, "airlock version", nil, 0, "airlock ")
}

// quickOperator: a token file, the plugins folder checked offline, a
// broker serving it, and the broker asked what it admitted.
func quickOperator(t *testing.T, q *quickWorld, body string) {
	l := q.lines(t, body, "(umask 077 ", "airlock tools --plugins ~/airlock-plugins", "airlock serve --token-file T --plugins ~/airlock-plugins --root notes=~/notes &", "airlock tools --broker http://127.0.0.1:7420 --token-file T")
	q.run(t, q.work, l[0], nil, 0)
	if info, err := os.Stat(q.token()); err != nil || info.Mode().Perm() != 0o600 || info.Size() < 40 {
		t.Fatalf("the token file: %v %v", info, err)
	}
	q.run(t, q.work, l[1], nil, 0, "fx")
	q.operator = startLine(t, q.work, q.env, strings.TrimSuffix(l[2], "&")+" --listen 127.0.0.1:0")
	q.operatorAddr = q.operator.waitListening(t)
	q.run(t, q.work, strings.ReplaceAll(l[3], "127.0.0.1:7420", q.operatorAddr), nil, 0, "fx", "read_notes")
}

// quickAgent starts the MCP server the agent's configuration names and
// lists and calls a tool with the Go SDK's client, as an agent's host would.
func quickAgent(t *testing.T, q *quickWorld, body string) {
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(body), &cfg); err != nil {
		t.Fatalf("README.md line %d: the agent's configuration is not JSON: %v", q.block.line, err)
	}
	server, ok := cfg.MCPServers["airlock"]
	if !ok || server.Command != "airlock" {
		t.Fatalf("README.md line %d: no airlock server named airlock: %s", q.block.line, body)
	}
	args := make([]string, len(server.Args))
	for i, a := range server.Args {
		args[i] = strings.ReplaceAll(a, "/path/to/notes", filepath.Join(q.home, "notes"))
	}
	cmd := exec.Command(filepath.Join(q.bin, server.Command), args...)
	cmd.Dir, cmd.Env = q.work, q.env
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := mcptest.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second})
	if err != nil {
		t.Fatalf("the agent's airlock did not start: %v\n%s", err, tail(stderr.String(), 4000))
	}
	// An agent's first call comes after the modules are compiled here: on
	// the race detector, loading one from the cache outlasts notes' 2 s.
	testkit.Eventually(t, "the agent's airlock to compile its modules", func() bool { return strings.Contains(stderr.String(), allCompiled) })
	if _, ok := c.List(t)["read_notes"]; !ok {
		t.Errorf("the agent is not offered read_notes: %v", c.List(t))
	}
	res := c.Call(t, "read_notes", map[string]any{"path": "welcome.md"})
	if res.IsError || !strings.Contains(mcptest.Text(res), "from the quick start") {
		t.Errorf("read_notes: %s", mcptest.Text(res))
	}
	if err := c.Close(); err != nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the agent's airlock did not exit 0 when its stdin closed: %v %v\n%s", err, cmd.ProcessState, tail(stderr.String(), 4000))
	}
}

// quickSRE: a broker on the notes folder, a steady load and a load in
// turns with the floor; the broker is stopped at the end and exits 0.
func quickSRE(t *testing.T, q *quickWorld, body string) {
	l := q.lines(t, body, "airlock serve --token-file T --root notes=DIR &", "airlock load calls --token-file T --steady -d 60s", "airlock load calls --token-file T --root notes=DIR -d 60s")
	dir := filepath.Join(q.home, "notes")
	sub := func(line, addr string) string {
		line = strings.ReplaceAll(line, "notes=DIR", "notes="+dir)
		line = strings.ReplaceAll(line, "-d 60s", "-d 2s")
		if addr != "" {
			line += " --broker http://" + addr
		}
		return line
	}
	broker := startLine(t, q.work, q.env, strings.TrimSuffix(sub(l[0], ""), "&")+" --listen 127.0.0.1:0")
	addr := broker.waitListening(t)
	q.run(t, q.work, sub(l[1], addr), nil, 0, "read_notes", "ok")
	q.run(t, q.work, sub(l[2], addr), nil, 0, "read_notes", "ok", "plain")
	if code := broker.stop(); code != 0 {
		t.Fatalf("the SRE's broker exited %d:\n%s", code, tail(broker.stderr.String(), 4000))
	}
}

// quickPluginAuthor writes, builds, installs and runs a plugin; the
// operator's running broker admits it.
func quickPluginAuthor(t *testing.T, q *quickWorld, body string) {
	l := q.lines(t, body, "airlock new greet", "airlock build greet --install ~/airlock-plugins", `airlock run greet greet --args '{"name":"Ada"}'`)
	q.run(t, q.work, l[0], nil, 0, "wrote greet")
	q.run(t, q.work, l[1], nil, 0, "installed into")
	q.run(t, q.work, l[2], nil, 0, `"ok": true`, "Ada")
	waitListed(t, q.operatorAddr, q.token(), "greet")
}

// quickPaired pairs a machine with the operator's broker and runs its
// environment, whose tool the broker then lists; the environment stops
// on SIGTERM with exit 0.
func quickPaired(t *testing.T, q *quickWorld, body string) {
	l := q.lines(t, body, "airlock pair add laptop > laptop.bearer && chmod 600 laptop.bearer", "airlock env --broker ws://127.0.0.1:7420/channel --bearer-file laptop.bearer --plugins ~/my-tools")
	q.run(t, q.work, l[0], nil, 0)
	if data, err := os.ReadFile(filepath.Join(q.work, "laptop.bearer")); err != nil || !strings.HasPrefix(string(data), "vbx_") {
		t.Fatalf("laptop.bearer: %v", err)
	}
	// The broker notices the pairing by watching its data folder; an
	// environment that connected before that would be refused.
	q.operator.waitFor(t, "the new pairing loaded", func() bool {
		return strings.Contains(q.operator.stderr.String(), `"msg":"pairings loaded","pairings":1`)
	})
	env := startLine(t, q.work, q.env, strings.ReplaceAll(l[1], "127.0.0.1:7420", q.operatorAddr))
	env.waitOutput(t, `"event":"connected"`)
	waitListed(t, q.operatorAddr, q.token(), "mine")
	if code := env.stop(); code != 0 {
		t.Fatalf("the environment exited %d:\n%s", code, tail(env.stderr.String(), 4000))
	}
}
