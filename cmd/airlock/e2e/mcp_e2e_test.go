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

// mcpProc is an MCP client session with `airlock mcp` and the process's
// stderr.
type mcpProc struct {
	*mcptest.Client
	stderr *testkit.Buffer
}

// startMCP runs `airlock mcp args...` and connects the Go SDK's client to
// it over the process's stdin and stdout. At cleanup the client closes
// stdin and the process must exit 0 by itself, with nothing but MCP on
// its stdout (the SDK's client fails the session on anything else).
func startMCP(t *testing.T, env []string, args ...string) *mcpProc {
	t.Helper()
	if !hasFlag(args, "--data") && !hasFlag(args, "--broker") {
		args = append(args, "--data", t.TempDir())
	}
	cmd := exec.Command(binPath, append([]string{"mcp"}, args...)...)
	cmd.Env = append(append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir), env...)
	p := &mcpProc{stderr: &testkit.Buffer{}}
	cmd.Stderr = p.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := mcptest.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second})
	if err != nil {
		t.Fatalf("connect to airlock mcp: %v\nstderr:\n%s", err, p.stderr.String())
	}
	p.Client = c
	// Calls run at once only once the modules are compiled (startServe);
	// with --broker there is no broker of its own, and nothing to compile.
	if !hasFlag(args, "--broker") {
		testkit.Eventually(t, "airlock mcp to compile its modules", func() bool { return strings.Contains(p.stderr.String(), allCompiled) })
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("airlock mcp did not exit cleanly when its stdin closed: %v", err)
		}
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("airlock mcp exited %d", cmd.ProcessState.ExitCode())
		}
		if t.Failed() {
			t.Logf("airlock mcp stderr:\n%s", tail(p.stderr.String(), 8000))
		}
	})
	return p
}

// notesRoot is a notes folder holding one note.
func notesRoot(t *testing.T) string {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("hello from a\n"), 0o600))
	return dir
}

func TestMCPStdioEmbedded(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 1000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fxloop", b, "loop"), testkit.Fixture(t, "guest.wasm")))
	fx := b
	fx.TimeoutMs, fx.MaxRequests, fx.AllowedHosts = 60000, 1, []string{"127.0.0.1:" + closedPort(t)}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", fx, "membomb", "bigout", "fetch"), testkit.Fixture(t, "guest.wasm")))
	c := startMCP(t, nil, "--root", "notes="+notesRoot(t), "--plugins", plugDir)

	tools := c.List(t)
	for _, want := range []string{"read_notes", "list_notes", "search_notes", "fetch_url", "loop"} {
		if tools[want] == nil {
			t.Fatalf("%s not listed: %v", want, tools)
		}
	}
	if rn := tools["read_notes"]; !rn.Annotations.ReadOnlyHint || *rn.Annotations.OpenWorldHint || rn.Meta["descriptorId"] != "notes" {
		t.Errorf("read_notes: %+v %+v", rn.Annotations, rn.Meta)
	}

	res := c.Call(t, "read_notes", map[string]any{"path": "a.md"})
	if res.IsError || !strings.Contains(mcptest.Text(res), "hello from a") {
		t.Fatalf("read_notes: %+v %s", res, mcptest.Text(res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != mcptest.Text(res) {
		t.Errorf("structuredContent %s is not the text %s", sc, mcptest.Text(res))
	}

	// Refusals are results with isError, read "<rule id>: <why>".
	res = c.Call(t, "loop", nil)
	if !res.IsError || mcptest.Text(res) != "exec-timeout: "+wire.TimeoutWhy(b.TimeoutMs) {
		t.Fatalf("loop: %+v %q", res, mcptest.Text(res))
	}
	sc, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"refused":"exec-timeout"`) || !strings.Contains(string(sc), `"budget":{`) {
		t.Errorf("refusal structuredContent %s", sc)
	}
	// Every bound is a refusal by name.
	for _, rc := range []struct {
		tool string
		args map[string]any
		rule wire.Rule
	}{
		{"membomb", nil, wire.MemoryExhausted},
		{"bigout", map[string]any{"N": 5000}, wire.OutputTooLarge},
		{"fetch", map[string]any{"URL": "http://192.0.2.1/"}, wire.HostNotAllowed},
		{"fetch", map[string]any{"URL": "http://" + fx.AllowedHosts[0] + "/"}, wire.FetchFailed}, // allowed, nothing listening
	} {
		res := c.Call(t, rc.tool, rc.args)
		if !res.IsError || !strings.HasPrefix(mcptest.Text(res), string(rc.rule)+": ") {
			t.Errorf("%s: %q, want %s", rc.tool, mcptest.Text(res), rc.rule)
		}
	}
	if tools["fetch"] == nil || !*tools["fetch"].Annotations.OpenWorldHint {
		t.Error("fetch is not open-world")
	}
	// args-invalid names the unexpected key, the allowed ones and the
	// failing keyword, never the value.
	res = c.Call(t, "read_notes", map[string]any{"nope": "secret-ish value"})
	if text := mcptest.Text(res); !res.IsError || text != `args-invalid: unexpected key "nope"; allowed: path; /path: required` {
		t.Errorf("args-invalid: %q", text)
	}
	// A tool error reaches the agent in the tool's own words.
	res = c.Call(t, "read_notes", map[string]any{"path": "missing.md"})
	if text := mcptest.Text(res); !res.IsError || text != `exec-threw: tool error: no note "missing.md"` {
		t.Errorf("tool error: %q", text)
	}

	// Protocol errors are JSON-RPC errors.
	if _, err := c.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool is not a JSON-RPC error")
	}
	if _, err := c.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_notes", Arguments: json.RawMessage(`[1]`)}); err == nil {
		t.Error("arguments that are not an object are not a JSON-RPC error")
	}
}

func TestMCPStdioRemoteBroker(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notesRoot(t)}, Env: tokenEnv(), Secrets: []string{testToken}})
	c := startMCP(t, tokenEnv(), "--broker", p.URL())
	if tools := c.List(t); tools["read_notes"] == nil || tools["read_notes"].Meta["executor"] != "local" {
		t.Fatalf("tools %v", tools)
	}
	res := c.Call(t, "read_notes", map[string]any{"path": "a.md"})
	if res.IsError || !strings.Contains(mcptest.Text(res), "hello from a") {
		t.Fatalf("read_notes: %q", mcptest.Text(res))
	}
	res = c.Call(t, "read_notes", map[string]any{"path": 3})
	if !res.IsError || !strings.HasPrefix(mcptest.Text(res), "args-invalid: ") {
		t.Errorf("args-invalid: %q", mcptest.Text(res))
	}
	if strings.Contains(c.stderr.String(), testToken) {
		t.Error("airlock mcp logged the launch token")
	}
}

// TestMCPListChangedOnPlugins drops a plugin into --plugins while a client
// is connected, then retires it: each time the client is told, and the
// list follows.
func TestMCPListChangedOnPlugins(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	c := startMCP(t, nil, "--plugins", plugDir, "--no-builtin")
	if tools := c.List(t); len(tools) != 0 {
		t.Fatalf("tools before: %v", tools)
	}
	b := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	// Staged under a hidden name and renamed into place, as an operator
	// would, so the catalog never sees half a folder.
	stage := t.TempDir()
	must(t, plugins.WriteFolder(stage, fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	must(t, os.Rename(filepath.Join(stage, "fx"), filepath.Join(plugDir, "fx")))
	c.Wait(t, mcptest.ListChanged)
	if tools := c.List(t); tools["echo"] == nil {
		t.Fatalf("echo not listed after the drop-in: %v", tools)
	}
	if res := c.Call(t, "echo", map[string]any{"x": 1}); res.IsError {
		t.Fatalf("echo: %q", mcptest.Text(res))
	}
	must(t, os.RemoveAll(filepath.Join(plugDir, "fx")))
	c.Wait(t, mcptest.ListChanged)
	if tools := c.List(t); len(tools) != 0 {
		t.Fatalf("tools after retirement: %v", tools)
	}
}

// TestMCPCancelStopsModule: notifications/cancelled for a call of an
// infinite loop stops the module at once, not at its time bound (60 s);
// the client asked for progress and got it while the call ran.
func TestMCPCancelStopsModule(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fxloop", b, "loop", "echo"), testkit.Fixture(t, "guest.wasm")))
	c := startMCP(t, nil, "--plugins", plugDir, "--no-builtin")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &sdk.CallToolParams{Name: "loop", Arguments: map[string]any{}}
	params.SetProgressToken("loop-1")
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, params)
		done <- err
	}()
	c.Wait(t, mcptest.Progress) // the call has run for a second
	cancelled := time.Now()
	cancel()
	if err := testkit.Receive(t, "the cancelled call to return", done); err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	// The module's run ends, and is logged, when its context is cancelled.
	stopped := func() bool {
		for _, line := range scanLines(c.stderr.String()) {
			if strings.Contains(line, `"msg":"call cancelled"`) && strings.Contains(line, `"tool":"loop"`) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(30 * time.Second)
	for !stopped() {
		if time.Now().After(deadline) {
			t.Fatal("the loop was not stopped by the cancel")
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("the loop stopped %v after notifications/cancelled (its time bound: %d ms)", time.Since(cancelled), b.TimeoutMs)
	// The session goes on.
	if res := c.Call(t, "echo", map[string]any{"a": 1}); res.IsError {
		t.Errorf("echo after the cancel: %q", mcptest.Text(res))
	}
}

// TestMCPStdinClosedStopsCalls: a client that goes away (its end of
// stdin closes) with a call of an infinite loop in flight leaves nothing
// running: `airlock mcp` stops the module and exits 0 well before the
// loop's time bound (60 s).
func TestMCPStdinClosedStopsCalls(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fxloop", b, "loop"), testkit.Fixture(t, "guest.wasm")))
	cmd := exec.Command(binPath, "mcp", "--plugins", plugDir, "--no-builtin", "--data", t.TempDir())
	cmd.Env = append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir)
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// The SDK's client closes stdin only once its calls have answered, so
	// the test closes it under the client, as a client that crashed would.
	c, err := mcptest.Connect(context.Background(), &sdk.IOTransport{Reader: stdout, Writer: stdin})
	must(t, err)
	params := &sdk.CallToolParams{Name: "loop", Arguments: map[string]any{}}
	params.SetProgressToken("p")
	go func() { _, _ = c.CallTool(context.Background(), params) }()
	c.Wait(t, mcptest.Progress)
	start := time.Now()
	must(t, stdin.Close())
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("airlock mcp still runs 30 s after its stdin closed\n%s", stderr.String())
	}
	t.Logf("airlock mcp exited %v after its stdin closed, a call of an infinite loop in flight", time.Since(start))
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
	_ = c.Close()
}
