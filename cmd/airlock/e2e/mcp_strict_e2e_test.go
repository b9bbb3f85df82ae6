package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// duplicateMessages are MCP messages whose keys a reader that keeps the
// first of two and one that keeps the last read differently: a policy
// proxy would check echo, or ping, while trap, or another id, ran.
var duplicateMessages = []string{
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"name":"trap"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","Name":"trap","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping","Method":"tools/call","params":{"name":"trap"}}`,
	`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"k":1,"K":2}},"params":{"name":"trap"}}`,
}

// TestMCPStdioDuplicateKeysRefused: each message with a duplicate key,
// exact or case-folded, at any depth, is answered -32600 with a null id,
// nothing runs, and the session goes on.
func TestMCPStdioDuplicateKeysRefused(t *testing.T) {
	t.Parallel()
	r := startRawMCP(t)
	for _, line := range duplicateMessages {
		r.send(line)
		m := r.response()
		if code := rpcCode(m); code != -32600 || m["id"] != nil {
			t.Errorf("%s: answered %v, want error -32600 with id null", line, m)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`)
	if m := r.response(); m["id"] != float64(11) || m["result"] == nil {
		t.Fatalf("a call after the refused lines: %v", m)
	}
	if logged(r.stderr.String(), `"tool":"trap"`) {
		t.Error("trap ran")
	}
}

// TestMCPHTTPDuplicateKeysRefused: the same on /mcp, inside a session:
// 400 with the JSON-RPC error, and the trap tool never runs.
func TestMCPHTTPDuplicateKeysRefused(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 10000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo", "trap"), testkit.Fixture(t, "guest.wasm")))
	p := startServe(t, procOptions{Args: []string{"--plugins", plugDir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	s := openHTTPSession(t, p)
	for _, body := range duplicateMessages {
		status, data, header := s.post(body)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil || status != 400 || rpcCode(m) != -32600 || m["id"] != nil ||
			!strings.HasPrefix(header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s %s, want 400 with error -32600 and id null", body, status, header.Get("Content-Type"), data)
		}
	}
	if status, data, _ := s.post(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`); status != 200 ||
		!strings.Contains(string(data), `"id":11`) || !strings.Contains(string(data), `"result"`) {
		t.Fatalf("a call after the refused bodies: %d %s", status, data)
	}
	if got := metricValue(scrape(t, p), "airlock_tool_calls_total", `descriptor="fx"`, `tool="trap"`, `outcome="exec-threw"`); got != 0 {
		t.Errorf("trap ran %v times", got)
	}
}

// TestMCPHTTPUnknownMethodIsJSONError: a method the SDK does not serve is
// refused with section 1.4's JSON body, which never quotes the request
// (the SDK's own answer is plain text that does).
func TestMCPHTTPUnknownMethodIsJSONError(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	s := openHTTPSession(t, p)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"no/such-<script>-method","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/no-such-<script>"}`,
	} {
		status, data, header := s.post(body)
		if status != 400 || !strings.HasPrefix(header.Get("Content-Type"), "application/json") ||
			!strings.Contains(string(data), `"code":"INVALID_MESSAGE"`) || strings.Contains(string(data), "no-such") {
			t.Errorf("%s: %d %s %q, want 400 with the INVALID_MESSAGE body", body, status, header.Get("Content-Type"), data)
		}
	}
	// The session goes on.
	if status, data, _ := s.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`); status != 200 || !strings.Contains(string(data), `"id":4`) {
		t.Errorf("ping after the unknown method: %d %s", status, data)
	}
}
