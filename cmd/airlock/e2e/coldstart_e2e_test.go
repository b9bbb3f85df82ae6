package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// TestMCPListsToolsWhileCompiling starts `airlock mcp` on an empty
// compilation cache: tools/list is answered from the admitted descriptors
// before the modules are compiled, a call sent at once waits for its
// module and is answered as usual, and a module refused by a check that
// needs compilation (its imports) is refused by name afterwards and its
// tool withdrawn, with a list_changed when it had been listed.
func TestMCPListsToolsWhileCompiling(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 64, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	bad := fxManifestOf("badimports", b, "bad_echo")
	must(t, plugins.WriteFolder(plugDir, bad, testkit.Fixture(t, "imports-env.wasm")))
	cold := filepath.Join(t.TempDir(), "cc") // nothing compiled yet
	cmd := exec.Command(binPath, "mcp", "--root", "notes="+notesRoot(t), "--plugins", plugDir, "--data", t.TempDir())
	cmd.Env = append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cold)
	r := openRawMCP(t, cmd, latestRevision)

	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_notes","arguments":{"path":"a.md"}}}`)
	list := r.response()
	atList := r.stderr.String()
	if list["id"] != float64(1) {
		t.Fatalf("first answer is not tools/list's: %v", list)
	}
	listed := toolNames(list)
	if !listed["read_notes"] || !listed["list_notes"] || !listed["fetch_url"] {
		t.Fatalf("bundled tools not listed: %v", listed)
	}
	// The bundled modules take seconds to compile on an empty cache; the
	// list did not wait for them.
	if logged(atList, `"msg":"plugin compiled"`, `"plugin":"notes"`) {
		t.Errorf("tools/list was answered only once notes had compiled:\n%s", atList)
	}

	// The call waited for its module within its time bound.
	var call map[string]any
	sawChanged := false
	for call == nil {
		m := r.next()
		switch {
		case m["method"] == "notifications/tools/list_changed":
			sawChanged = true
		case m["id"] == float64(2):
			call = m
		}
	}
	res, _ := call["result"].(map[string]any)
	content, _ := res["content"].([]any)
	text := ""
	if len(content) == 1 {
		text, _ = content[0].(map[string]any)["text"].(string)
	}
	if res == nil || res["isError"] == true || !strings.Contains(text, "hello from a") {
		t.Fatalf("read_notes sent while compiling: %v", call)
	}
	testkit.Eventually(t, "notes compiled, and logged", func() bool {
		return logged(r.stderr.String(), `"msg":"plugin compiled"`, `"plugin":"notes"`)
	})

	// The module that imports what the broker does not provide is refused
	// by name once compiled, and its tool is gone.
	testkit.Eventually(t, "badimports refused imports-refused", func() bool {
		return logged(r.stderr.String(), `"msg":"plugin refused"`, `"plugin":"badimports"`, `"reason":"imports-refused"`)
	})
	if listed["bad_echo"] {
		for !sawChanged {
			if m := r.next(); m["method"] == "notifications/tools/list_changed" {
				sawChanged = true
			}
		}
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	again := toolNames(r.response())
	if again["bad_echo"] || !again["read_notes"] {
		t.Errorf("after compilation the list is %v", again)
	}
}

// toolNames is the set of tool names of a tools/list result.
func toolNames(m map[string]any) map[string]bool {
	res, _ := m["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	names := map[string]bool{}
	for _, tl := range tools {
		if o, ok := tl.(map[string]any); ok {
			name, _ := o["name"].(string)
			names[name] = true
		}
	}
	return names
}

// TestServeListensWhileCompiling starts `airlock serve` on an empty
// compilation cache: the listening line comes before the bundled modules
// are compiled, and a call sent at once waits for its module.
func TestServeListensWhileCompiling(t *testing.T) {
	t.Parallel()
	cold := filepath.Join(t.TempDir(), "cc")
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notesRoot(t)},
		Env: append(tokenEnv(), "AIRLOCK_EXEC_CACHE_DIR="+cold), Secrets: []string{testToken}})
	if logged(p.Stderr(), `"msg":"plugin compiled"`, `"plugin":"notes"`) {
		t.Errorf("the listening line came only once notes had compiled:\n%s", p.Stderr())
	}
	a := postCall(t, p, readNotesCall("c1", notesBounds(t, p)))
	if !a.OK || !strings.Contains(string(a.Observed), "hello from a") {
		t.Fatalf("read_notes sent while compiling: %+v", a)
	}
}
