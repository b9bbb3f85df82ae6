package main

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

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// mcpClient is an MCP client session with the real binary, over the
// process's stdio (airlock mcp) or over /mcp, and the notifications it
// received.
type mcpClient struct {
	cs     *sdk.ClientSession
	stderr *testkit.Buffer // the process's, for airlock mcp
	notes  chan string     // "list_changed", "progress"
}

func newMCPClient(notes chan string) *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "e2e"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case notes <- "list_changed":
			default:
			}
		},
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			select {
			case notes <- "progress":
			default:
			}
		},
	})
}

// startMCP runs `airlock mcp args...` and connects the Go SDK's client to
// it over the process's stdin and stdout. At cleanup the client closes
// stdin and the process must exit 0 by itself, with nothing but MCP on
// its stdout (the SDK's client fails the session on anything else).
func startMCP(t *testing.T, env []string, args ...string) *mcpClient {
	t.Helper()
	if !hasFlag(args, "--data") && !hasFlag(args, "--broker") {
		args = append(args, "--data", t.TempDir())
	}
	cmd := exec.Command(binPath, append([]string{"mcp"}, args...)...)
	cmd.Env = append(append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir), env...)
	c := &mcpClient{stderr: &testkit.Buffer{}, notes: make(chan string, 64)}
	cmd.Stderr = c.stderr
	// A broker compiles its plugins before it answers initialize.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := newMCPClient(c.notes).Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to airlock mcp: %v\nstderr:\n%s", err, c.stderr.String())
	}
	c.cs = cs
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("airlock mcp did not exit cleanly when its stdin closed: %v", err)
		}
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("airlock mcp exited %d", cmd.ProcessState.ExitCode())
		}
		if t.Failed() {
			t.Logf("airlock mcp stderr:\n%s", tail(c.stderr.String(), 8000))
		}
	})
	return c
}

func (c *mcpClient) list(t *testing.T) map[string]*sdk.Tool {
	t.Helper()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func (c *mcpClient) call(t *testing.T, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// wait waits for a notification.
func (c *mcpClient) wait(t *testing.T, what string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case got := <-c.notes:
			if got == what {
				return
			}
		case <-deadline:
			t.Fatalf("no %s notification", what)
		}
	}
}

func text(res *sdk.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
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
	c := startMCP(t, nil, "--root", "notes="+notesRoot(t), "--plugins", plugDir)

	tools := c.list(t)
	for _, want := range []string{"read_notes", "list_notes", "search_notes", "fetch_url", "loop"} {
		if tools[want] == nil {
			t.Fatalf("%s not listed: %v", want, tools)
		}
	}
	if rn := tools["read_notes"]; !rn.Annotations.ReadOnlyHint || *rn.Annotations.OpenWorldHint || rn.Meta["descriptorId"] != "notes" {
		t.Errorf("read_notes: %+v %+v", rn.Annotations, rn.Meta)
	}

	res := c.call(t, "read_notes", map[string]any{"path": "a.md"})
	if res.IsError || !strings.Contains(text(res), "hello from a") {
		t.Fatalf("read_notes: %+v %s", res, text(res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != text(res) {
		t.Errorf("structuredContent %s is not the text %s", sc, text(res))
	}

	// Refusals are results with isError, read "<rule id>: <why>".
	res = c.call(t, "loop", nil)
	if !res.IsError || text(res) != "exec-timeout: "+wire.ExecTimeout.Why() {
		t.Fatalf("loop: %+v %q", res, text(res))
	}
	sc, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"refused":"exec-timeout"`) || !strings.Contains(string(sc), `"budget":{`) {
		t.Errorf("refusal structuredContent %s", sc)
	}
	res = c.call(t, "read_notes", map[string]any{"nope": 1})
	if !res.IsError || !strings.HasPrefix(text(res), "args-invalid: ") {
		t.Errorf("args-invalid: %q", text(res))
	}

	// Protocol errors are JSON-RPC errors.
	if _, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool is not a JSON-RPC error")
	}
	if _, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_notes", Arguments: json.RawMessage(`[1]`)}); err == nil {
		t.Error("arguments that are not an object are not a JSON-RPC error")
	}
}

func TestMCPStdioRemoteBroker(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notesRoot(t)}, Env: tokenEnv(), Secrets: []string{testToken}})
	c := startMCP(t, tokenEnv(), "--broker", p.URL())
	if tools := c.list(t); tools["read_notes"] == nil || tools["read_notes"].Meta["executor"] != "local" {
		t.Fatalf("tools %v", tools)
	}
	res := c.call(t, "read_notes", map[string]any{"path": "a.md"})
	if res.IsError || !strings.Contains(text(res), "hello from a") {
		t.Fatalf("read_notes: %q", text(res))
	}
	res = c.call(t, "read_notes", map[string]any{"path": 3})
	if !res.IsError || !strings.HasPrefix(text(res), "args-invalid: ") {
		t.Errorf("args-invalid: %q", text(res))
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
	if tools := c.list(t); len(tools) != 0 {
		t.Fatalf("tools before: %v", tools)
	}
	b := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	// Staged under a hidden name and renamed into place, as an operator
	// would, so the catalog never sees half a folder.
	stage := t.TempDir()
	must(t, plugins.WriteFolder(stage, fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	must(t, os.Rename(filepath.Join(stage, "fx"), filepath.Join(plugDir, "fx")))
	c.wait(t, "list_changed")
	if tools := c.list(t); tools["echo"] == nil {
		t.Fatalf("echo not listed after the drop-in: %v", tools)
	}
	if res := c.call(t, "echo", map[string]any{"x": 1}); res.IsError {
		t.Fatalf("echo: %q", text(res))
	}
	must(t, os.RemoveAll(filepath.Join(plugDir, "fx")))
	c.wait(t, "list_changed")
	if tools := c.list(t); len(tools) != 0 {
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
		_, err := c.cs.CallTool(ctx, params)
		done <- err
	}()
	c.wait(t, "progress") // the call has run for a second
	cancelled := time.Now()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	// The module's run ends, and is logged, when its context is cancelled.
	stopped := func() bool {
		for _, line := range scanLines(c.stderr.String()) {
			if strings.Contains(line, `"msg":"call refused"`) && strings.Contains(line, `"tool":"loop"`) {
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
	if res := c.call(t, "echo", map[string]any{"a": 1}); res.IsError {
		t.Errorf("echo after the cancel: %q", text(res))
	}
}
