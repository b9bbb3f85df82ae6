package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPTypeScriptClient: an independent client, the TypeScript SDK run
// by Node, lists and calls tools on `airlock mcp`, a typed tool among
// them: the SDK holds any structuredContent to the tool's outputSchema,
// so a refusal of that tool must reach it by name without one. It needs
// node and `npm ci` in testdata/mcp-ts (CI does both); without them it skips,
// unless AIRLOCK_REQUIRE_NODE is set.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "mcp-ts"))
	node, err := exec.LookPath("node")
	_, sdkErr := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"))
	if err != nil || sdkErr != nil {
		if os.Getenv("AIRLOCK_REQUIRE_NODE") != "" {
			t.Fatalf("node or the TypeScript SDK is missing (npm ci in %s): %v %v", dir, err, sdkErr)
		}
		t.Skipf("node or the TypeScript SDK is missing (npm ci in %s)", dir)
	}
	typed, _, _ := outputSchemaPlugins(t)
	cmd := exec.Command(node, "client.mjs", binPath, notesRoot(t), t.TempDir(), typed)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, tail(stderr.String(), 4000))
	}
	var got struct {
		Protocol struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"protocol"`
		Tools    []string `json:"tools"`
		ReadOnly bool     `json:"readOnly"`
		OK       struct {
			IsError    bool            `json:"isError"`
			Text       string          `json:"text"`
			Structured json.RawMessage `json:"structured"`
		} `json:"ok"`
		Refused struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"refused"`
		Unknown any `json:"unknown"`
		// Typed is the echo tool with an outputSchema, which the SDK
		// holds structuredContent to.
		Typed struct {
			Good struct {
				IsError    bool            `json:"isError"`
				Structured json.RawMessage `json:"structured"`
			} `json:"good"`
			Bad struct {
				IsError    bool            `json:"isError"`
				Text       string          `json:"text"`
				Structured json.RawMessage `json:"structured"`
			} `json:"bad"`
		} `json:"typed"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if !got.Protocol.Tools.ListChanged || !got.ReadOnly || !strings.Contains(strings.Join(got.Tools, ","), "read_notes") {
		t.Errorf("listing: %s", out)
	}
	if got.OK.IsError || !strings.Contains(got.OK.Text, "hello from a") || len(got.OK.Structured) == 0 {
		t.Errorf("read_notes: %s", out)
	}
	if !got.Refused.IsError || !strings.HasPrefix(got.Refused.Text, "args-invalid: ") {
		t.Errorf("refusal: %s", out)
	}
	if got.Unknown == nil {
		t.Errorf("an unknown tool was not an error: %s", out)
	}
	// The SDK validates any structuredContent against the outputSchema:
	// output-invalid reaches it by name, not as a schema error of its own.
	if got.Typed.Good.IsError || string(got.Typed.Good.Structured) != `{"n":1}` {
		t.Errorf("a conforming typed result: %s", out)
	}
	if !got.Typed.Bad.IsError || got.Typed.Bad.Text != "output-invalid: /n: type" || string(got.Typed.Bad.Structured) != "null" {
		t.Errorf("a non-conforming typed result: %s", out)
	}
}
