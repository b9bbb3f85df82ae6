package jsclient_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeSuites runs every node --test suite in test/ against the real
// broker: it builds cmd/airlock once into a temporary folder and hands it
// to the suites in AIRLOCK_BIN (test/door.test.mjs drives it as a page
// executor would; suites added later run here too). The parity suite
// skips here: TestWireParity runs it with its cases.
func TestNodeSuites(t *testing.T) {
	nodeBin := nodeOrSkip(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot build the broker")
	}
	bin := filepath.Join(t.TempDir(), "airlock")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/airlock/airlock/cmd/airlock")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, tail(string(out), 4000))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "--test", "--test-timeout=120000", "test/")
	cmd.Env = append(nodeEnv(), "AIRLOCK_BIN="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/: %v\nfailures:\n%s\nend of the output:\n%s", err, failures(string(out)), tail(string(out), 6000))
	}
	if strings.Contains(string(out), "AIRLOCK_BIN is not set") {
		t.Fatalf("a suite did not see AIRLOCK_BIN:\n%s", tail(string(out), 4000))
	}
	t.Logf("node suites:\n%s", tail(string(out), 600))
}

// nodeEnv is this process's environment without its AIRLOCK_* variables
// (AIRLOCK_REQUIRE_NODE and the like steer the Go tests): the brokers the
// suites launch inherit the environment, and a broker refuses an
// AIRLOCK_* variable it does not know.
func nodeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIRLOCK_") {
			env = append(env, kv)
		}
	}
	return env
}

// failures is each "not ok" line of TAP output with the lines after it
// that say why: the end of a long run's output may not hold them.
func failures(out string) string {
	lines := strings.Split(out, "\n")
	var b strings.Builder
	for i, l := range lines {
		if !strings.Contains(l, "not ok ") {
			continue
		}
		for _, m := range lines[i:min(i+12, len(lines))] {
			b.WriteString(m)
			b.WriteByte('\n')
		}
	}
	return tail(b.String(), 6000)
}
