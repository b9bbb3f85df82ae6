package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// mcpRevisions are the MCP revisions the server speaks (PROTOCOL section
// 11): 2026-07-28 without sessions (server/discover), the others with a
// session opened at initialize, since agents in the wild still speak them.
var mcpRevisions = []string{statelessRevision, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// TestMCPEveryRevisionOnStdio: a client initializing (or discovering) at
// each revision is answered at that revision, lists the tools and calls
// one.
func TestMCPEveryRevisionOnStdio(t *testing.T) {
	t.Parallel()
	for _, rev := range mcpRevisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			r := startRawMCPAt(t, rev)
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + withMeta(rev, `{}`) + `}`)
			if m := r.response(); !strings.Contains(jsonText(m), `"name":"echo"`) {
				t.Fatalf("tools/list at %s: %v", rev, m)
			}
			r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + withMeta(rev, `{"name":"echo","arguments":{"rev":"`+rev+`"}}`) + `}`)
			if m := r.response(); rpcCode(m) != 0 || !strings.Contains(jsonText(m), rev) || strings.Contains(jsonText(m), `"isError":true`) {
				t.Fatalf("tools/call at %s: %v", rev, m)
			}
		})
	}
}

// TestMCPEveryRevisionOnHTTP: the same on /mcp, each request carrying the
// revision in Mcp-Protocol-Version (2026-07-28's in no session); the
// token rule holds on every one.
func TestMCPEveryRevisionOnHTTP(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo"), testkit.Fixture(t, "guest.wasm")))
	p := startServe(t, procOptions{Args: []string{"--plugins", plugDir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	for _, rev := range mcpRevisions {
		s := openHTTPSessionAt(t, p, rev)
		if status, data, _ := s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + withMeta(rev, `{}`) + `}`); status != 200 || !strings.Contains(string(data), `"name":"echo"`) {
			t.Fatalf("tools/list at %s: %d %s", rev, status, data)
		}
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + withMeta(rev, `{"name":"echo","arguments":{"rev":"`+rev+`"}}`) + `}`
		status, data, _ := s.post(call)
		if status != 200 || !strings.Contains(string(data), rev) || strings.Contains(string(data), `"isError":true`) {
			t.Fatalf("tools/call at %s: %d %s", rev, status, data)
		}
		if status, _, _ := p.do("POST", "/mcp", s.header(call), []byte(call)); status != 401 {
			t.Errorf("at %s a call without the token: %d, want 401", rev, status)
		}
	}
}

// jsonText is m as JSON, for looking for a fragment in it.
func jsonText(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}
