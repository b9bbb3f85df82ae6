package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
)

// TestDemo runs the README's first command as a user would: the demo
// starts, makes its read_notes call, prints how to go on, and a second
// command following those instructions works; Ctrl-C ends it with 0.
func TestDemo(t *testing.T) {
	p := start(t, []string{"demo", "--listen", "127.0.0.1:0"}, procOptions{})
	p.waitListening()
	testkit.Eventually(t, "the demo's call and instructions", func() bool { return strings.Contains(p.stdout.String(), "Ctrl-C stops the demo") })
	out := p.stdout.String()
	for _, want := range []string{`"tool":"read_notes"`, `"ok": true`, "# Welcome to Airlock", "welcome.md, as the sandboxed notes tool read it"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`cat (\S+/token)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no token file in the instructions:\n%s", out)
	}
	code, stdout, stderr := runCLI(t, nil, "call", "search_notes", "--broker", p.URL(), "--token-file", m[1], "--args", `{"query":"bounds"}`)
	if code != 0 || !strings.Contains(stdout, "bounds.md") {
		t.Errorf("following the demo's instructions: exit %d\n%s\n%s", code, stdout, stderr)
	}
	must(t, p.cmd.Process.Signal(syscall.SIGINT))
	if code := p.Wait(30 * time.Second); code != 0 {
		t.Errorf("demo exited %d on Ctrl-C", code)
	}
}
