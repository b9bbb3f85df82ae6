package e2e

import (
	"context"
	"net/http"
	"os"
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

// TestMCPStatelessGuards: a 2026-07-28 tools/call, which opens no session
// on /mcp, is refused as every other request is: without the token, with
// a foreign Origin (token or not), with a foreign Host, each with section
// 1.4's body; none of them runs the tool.
func TestMCPStatelessGuards(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	p := startServe(t, procOptions{Args: []string{"--plugins", plugDir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	s := openHTTPSessionAt(t, p, statelessRevision)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + withMeta(statelessRevision, `{"name":"echo","arguments":{"x":1}}`) + `}`
	for name, c := range map[string]struct {
		set    map[string]string
		status int
		code   string
	}{
		"no token":                 {nil, 401, "INVALID_CREDENTIALS"},
		"wrong token":              {map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 40)}, 401, "INVALID_CREDENTIALS"},
		"foreign Origin":           {map[string]string{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example"}, 403, "INVALID_ORIGIN"},
		"foreign Origin, no token": {map[string]string{"Origin": "https://evil.example"}, 403, "INVALID_ORIGIN"},
		"other port":               {map[string]string{"Authorization": "Bearer " + testToken, "Origin": "http://127.0.0.1:1"}, 403, "INVALID_ORIGIN"},
		"foreign Host":             {map[string]string{"Authorization": "Bearer " + testToken, "Host": "evil.example:" + portOf(p.URL())}, 403, "INVALID_ORIGIN"},
	} {
		h := s.header(call)
		for k, v := range c.set {
			h[k] = v
		}
		status, body, _ := p.do("POST", "/mcp", h, []byte(call))
		if status != c.status || !strings.Contains(string(body), `"code":"`+c.code+`"`) || strings.Contains(string(body), "echo") {
			t.Errorf("%s: %d %s, want %d %s", name, status, body, c.status, c.code)
		}
	}
	if n := p.metric(t, `airlock_tool_calls_total{descriptor="fx",outcome="ok",tool="echo"}`); n > 0 {
		t.Errorf("refused stateless calls ran echo %v times", n)
	}
	// The same call with the token, from the broker's own origin, runs.
	h := s.header(call)
	h["Authorization"], h["Origin"] = "Bearer "+testToken, "http://127.0.0.1:"+portOf(p.URL())
	if status, body, _ := p.do("POST", "/mcp", h, []byte(call)); status != 200 || !strings.Contains(string(body), `"structuredContent":{"x":1}`) {
		t.Errorf("admitted stateless call: %d %s", status, body)
	}
	if n := p.metric(t, `airlock_tool_calls_total{descriptor="fx",outcome="ok",tool="echo"}`); n != 1 {
		t.Errorf("echo ran %v times, want the admitted call's once", n)
	}
}

// TestMCPStatelessSDKClient: the Go SDK's own client at 2026-07-28, with
// the token on every request, against `airlock serve`'s /mcp: it
// discovers (no session), lists, calls a bundled tool, and hears
// list_changed on its subscriptions/listen when a plugin drops in.
func TestMCPStatelessSDKClient(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	p := startServe(t, procOptions{Args: []string{"--plugins", plugDir, "--root", "notes=" + notesRoot(t)}, Env: tokenEnv(), Secrets: []string{testToken}})
	hc := &http.Client{Transport: headerTransport{http.Header{"Authorization": {"Bearer " + testToken}}, http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mcptest.ConnectAt(ctx, &sdk.StreamableClientTransport{Endpoint: p.URL() + "/mcp", HTTPClient: hc}, mcptest.Stateless)
	if err != nil {
		t.Fatalf("connect to /mcp at %s: %v", mcptest.Stateless, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if v := c.InitializeResult().ProtocolVersion; v != mcptest.Stateless {
		t.Fatalf("negotiated %s, want %s", v, mcptest.Stateless)
	}
	if tools := c.List(t); tools["read_notes"] == nil {
		t.Fatalf("read_notes not listed: %v", tools)
	}
	if res := c.Call(t, "read_notes", map[string]any{"path": "a.md"}); res.IsError || !strings.Contains(mcptest.Text(res), "hello from a") {
		t.Fatalf("read_notes: %+v %s", res, mcptest.Text(res))
	}
	if n := p.metric(t, `airlock_mcp_sessions{transport="http"}`); n != 0 {
		t.Errorf("airlock_mcp_sessions{http} = %v: a stateless client opens no session", n)
	}

	b := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	stage := t.TempDir()
	must(t, plugins.WriteFolder(stage, fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	must(t, os.Rename(filepath.Join(stage, "fx"), filepath.Join(plugDir, "fx")))
	c.Wait(t, mcptest.ListChanged)
	if tools := c.List(t); tools["echo"] == nil {
		t.Fatalf("echo not listed after the drop-in: %v", tools)
	}
	if res := c.Call(t, "echo", map[string]any{"x": 2}); res.IsError || mcptest.Text(res) != `{"x":2}` {
		t.Fatalf("echo: %+v %s", res, mcptest.Text(res))
	}
}
