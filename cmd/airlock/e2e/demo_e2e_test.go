package e2e

import (
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// TestDemo runs the README's demo command as a user would: the demo
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
	// The demo host animates a session whose view URL is printed: a view
	// bootstrapped from it sees the host and its state.
	viewURL := regexp.MustCompile(`(http://\S+/local/view#\S+)`).FindStringSubmatch(out)
	if viewURL == nil {
		t.Fatalf("no view URL in the output:\n%s", out)
	}
	u, err := url.Parse(viewURL[1])
	must(t, err)
	id, cred, _ := strings.Cut(u.Fragment, ".")
	// The one-time credential is printed for the user's browser, once,
	// and logged nowhere.
	if n := strings.Count(out, cred); n != 1 || strings.Contains(p.Stderr(), cred) {
		t.Errorf("the view credential is printed %d times (want 1), in the log: %v", n, strings.Contains(p.Stderr(), cred))
	}
	m := &localclient.Minted{SessionInfo: localclient.SessionInfo{WorkspaceSessionID: id, LaunchOrigin: p.URL()}, ViewCredential: cred}
	v, c := p.view(t, m, p.bootstrap(t, m))
	if !c.HostConnected {
		t.Fatalf("a view of the demo session sees no host: %+v", c)
	}
	v.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	for seen := map[string]bool{}; !seen["snapshot"] || !seen["focusNode"]; {
		msg, err := v.Receive(tctx(t))
		if err != nil {
			t.Fatalf("the demo view: %v (saw %v)", err, seen)
		}
		seen[msg.Type] = true
	}
	tf := regexp.MustCompile(`cat (\S+/token)\)`).FindStringSubmatch(out)
	if tf == nil {
		t.Fatalf("no token file in the instructions:\n%s", out)
	}
	code, stdout, stderr := runCLI(t, nil, "call", "search_notes", "--broker", p.URL(), "--token-file", tf[1], "--args", `{"query":"bounds"}`)
	if code != 0 || !strings.Contains(stdout, "bounds.md") {
		t.Errorf("following the demo's instructions: exit %d\n%s\n%s", code, stdout, stderr)
	}
	must(t, p.cmd.Process.Signal(syscall.SIGINT))
	if code := p.Wait(30 * time.Second); code != 0 {
		t.Errorf("demo exited %d on Ctrl-C", code)
	}
}
