package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPairCommands(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	code, out, errOut := runCLI(t, nil, "pair", "add", "laptop", "--data", data)
	bearer := strings.TrimSuffix(out, "\n")
	if code != 0 || !strings.HasPrefix(bearer, "vbx_") || strings.Count(out, "\n") != 1 || strings.Contains(errOut, bearer) {
		t.Fatalf("pair add: exit %d stdout %q stderr %q", code, out, errOut)
	}
	// Flags before the name work too.
	if code, _, errOut := runCLI(t, nil, "pair", "add", "--data", data, "desk"); code != 0 {
		t.Fatalf("pair add --data DIR NAME: %d %s", code, errOut)
	}
	code, out, _ = runCLI(t, nil, "pair", "ls", "--data", data)
	lines := scanLines(out)
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "desk\t") || !strings.HasPrefix(lines[1], "laptop\t") || strings.Contains(out, bearer) {
		t.Fatalf("pair ls: exit %d\n%s", code, out)
	}
	file, _ := os.ReadFile(filepath.Join(data, ".pairings.json"))
	if strings.Contains(string(file), bearer) {
		t.Fatal("the pairings file holds the bearer")
	}
	for name, args := range map[string][]string{
		"add twice":      {"pair", "add", "laptop", "--data", data},
		"bad name":       {"pair", "add", "Lap Top", "--data", data},
		"rm unknown":     {"pair", "rm", "nobody", "--data", data},
		"no name":        {"pair", "add", "--data", data},
		"two names":      {"pair", "add", "a", "b", "--data", data},
		"no subcommand":  {"pair"},
		"bad subcommand": {"pair", "show", "--data", data},
	} {
		if code, _, _ := runCLI(t, nil, args...); code == 0 {
			t.Errorf("%s: exit 0", name)
		}
	}
	if code, _, errOut := runCLI(t, nil, "pair", "rm", "laptop", "--data", data); code != 0 {
		t.Fatalf("pair rm: %d %s", code, errOut)
	}
	_, out, _ = runCLI(t, nil, "pair", "ls", "--data", data)
	if strings.Contains(out, "laptop") {
		t.Errorf("still listed after rm:\n%s", out)
	}
	// A pairings file others can read is refused.
	must(t, os.Chmod(filepath.Join(data, ".pairings.json"), 0o644))
	if code, _, errOut := runCLI(t, nil, "pair", "ls", "--data", data); code == 0 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("world-readable pairings file: exit %d %s", code, errOut)
	}
}

// TestPairConcurrentAddsFromProcesses: separate processes adding at once
// lose none of each other's pairings.
func TestPairConcurrentAddsFromProcesses(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, errOut := runCLI(t, nil, "pair", "add", fmt.Sprintf("env%d", i), "--data", data); code != 0 {
				t.Errorf("pair add env%d: %d %s", i, code, errOut)
			}
		}()
	}
	wg.Wait()
	_, out, _ := runCLI(t, nil, "pair", "ls", "--data", data)
	if got := len(scanLines(out)); got != n {
		t.Errorf("%d pairings after %d concurrent adds:\n%s", got, n, out)
	}
}
