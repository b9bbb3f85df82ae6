package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// TestMCPListsToolsWhileCompiling starts `airlock mcp` with a module no
// compilation cache holds: tools/list is answered from the admitted
// descriptors before that module is compiled, a call sent at once waits
// for it and is answered as usual, and a module refused by a check that
// needs compilation (its imports) is refused by name afterwards and its
// tool withdrawn, with a list_changed when it had been listed.
func TestMCPListsToolsWhileCompiling(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 64, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	// fx's time bound (the longest there is) outlasts its compilation
	// even under the race detector, where it takes many seconds.
	long := b
	long.TimeoutMs = wire.MaxTimeoutMs
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", long, "echo"), uncachedGuest(t)))
	bad := fxManifestOf("badimports", b, "bad_echo")
	bad.Module = "imports-env.wasm"
	must(t, plugins.WriteFolder(plugDir, bad, testkit.Fixture(t, "imports-env.wasm")))
	cmd := exec.Command(binPath, "mcp", "--root", "notes="+notesRoot(t), "--plugins", plugDir, "--data", t.TempDir())
	cmd.Env = append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheCopy(t))
	r := openRawMCP(t, cmd, latestRevision)

	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"said":"hello"}}}`)
	list := r.response()
	atList := r.stderr.String()
	if list["id"] != float64(1) {
		t.Fatalf("first answer is not tools/list's: %v", list)
	}
	listed := toolNames(list)
	if !listed["read_notes"] || !listed["list_notes"] || !listed["fetch_url"] || !listed["echo"] {
		t.Fatalf("tools not listed: %v", listed)
	}
	// fx, a Go-built module, takes a second or more to compile; the list
	// did not wait for it.
	if compiled(atList, "fx") {
		t.Errorf("tools/list was answered only once fx had compiled:\n%s", atList)
	}

	// The call waited for its module within its time bound.
	var call map[string]any
	sawChanged := false
	for call == nil {
		m := r.nextWithin(wire.MaxTimeoutMs * time.Millisecond)
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
	if res == nil || res["isError"] == true || text != `{"said":"hello"}` {
		t.Fatalf("echo sent while compiling: %v", call)
	}
	testkit.Eventually(t, "every module compiled, and logged", func() bool {
		return compiled(r.stderr.String(), "notes", "web", "fx")
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
	if again["bad_echo"] || !again["read_notes"] || !again["echo"] {
		t.Errorf("after compilation the list is %v", again)
	}
}

// compiled reports whether stderr logs every plugin of ids compiled.
func compiled(stderr string, ids ...string) bool {
	for _, id := range ids {
		if !logged(stderr, `"msg":"plugin compiled"`, `"plugin":"`+id+`"`) {
			return false
		}
	}
	return true
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

// TestServeListensWhileCompiling starts `airlock serve` with a module no
// compilation cache holds: the listening line comes before it is
// compiled, and a call sent at once waits for it.
func TestServeListensWhileCompiling(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: wire.MaxTimeoutMs, MemoryMiB: 64, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo"), uncachedGuest(t)))
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notesRoot(t), "--plugins", plugDir},
		Env: append(tokenEnv(), "AIRLOCK_EXEC_CACHE_DIR="+cacheCopy(t)), Secrets: []string{testToken}, Compiling: true})
	if compiled(p.Stderr(), "fx") {
		t.Errorf("the listening line came only once fx had compiled:\n%s", p.Stderr())
	}
	echo, err := json.Marshal(b)
	must(t, err)
	call := `{"v":1,"callId":"c1","tool":"echo","descriptorId":"fx","args":{"said":"hello"},"boundsEcho":` + string(echo) + `}`
	code, data, _, err := p.tryDoWithin(wire.MaxTimeoutMs*time.Millisecond, "POST", "/v1/calls", map[string]string{"X-Tensorviz-Token": testToken}, []byte(call))
	must(t, err)
	a, err := wire.ParseAnswer(data)
	must(t, err)
	if code != 200 {
		t.Errorf("status %d", code)
	}
	if !a.OK || string(a.Observed) != `{"said":"hello"}` {
		t.Fatalf("echo sent while compiling: %+v", a)
	}
}

// cacheCopy is a private compilation cache holding what the run's shared
// cache holds (every bundled and fixture module compiled), so that only
// uncachedGuest is compiled cold: under the race detector a cold
// compilation of a Go-built module takes many seconds.
func cacheCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "cc")
	must(t, filepath.WalkDir(cacheDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(cacheDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	}))
	return dst
}

// uncachedGuest is the guest fixture with a custom section appended: the
// same program, which no compilation cache holds.
func uncachedGuest(t *testing.T) []byte {
	const name, payload = "airlock", "cold start"
	body := append(append([]byte{byte(len(name))}, name...), payload...)
	module := append([]byte(nil), testkit.Fixture(t, "guest.wasm")...)
	return append(append(module, 0, byte(len(body))), body...)
}
