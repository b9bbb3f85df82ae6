package e2e

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

var (
	viewURLs = regexp.MustCompile(`http://\S+/local/view#\S+`)
	// mintLine is the printed `airlock mint` command, whatever the
	// program is called.
	mintLine = regexp.MustCompile(`(?m)^\s*(\S+ mint --broker \S+ --token-file (\S+))$`)
)

// TestDemo runs the README's demo command as a user would, in a terminal
// whose input is a pipe: the demo starts, makes its read_notes call,
// prints how to go on, and commands following those instructions work;
// Enter prints a fresh view link; the end of its input does not stop it,
// Ctrl-C ends it with 0 and removes its token file.
func TestDemo(t *testing.T) {
	stdin, typed, err := os.Pipe()
	must(t, err)
	t.Cleanup(func() { typed.Close() })
	p := start(t, []string{"demo", "--listen", "127.0.0.1:0"}, procOptions{Stdin: stdin})
	stdin.Close()
	p.waitListening()
	testkit.Eventually(t, "the demo's call and instructions", func() bool { return strings.Contains(p.stdout.String(), "Ctrl-C stops the demo") })
	out := p.stdout.String()
	for _, want := range []string{`"tool":"read_notes"`, `"ok": true`, "# Welcome to Airlock", "welcome.md, as the sandboxed notes tool read it", "Press Enter"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}

	// The launch token is in a 0600 file in the data directory, named
	// by the printed mint command; the token itself is printed nowhere.
	ml := mintLine.FindStringSubmatch(out)
	if ml == nil {
		t.Fatalf("no airlock mint command in the instructions:\n%s", out)
	}
	tokenFile := ml[2]
	fi, err := os.Lstat(tokenFile)
	must(t, err)
	if !strings.HasSuffix(tokenFile, "/data/demo-token") || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %s: mode %v, want a regular 0600 file data/demo-token", tokenFile, fi.Mode())
	}
	token, err := os.ReadFile(tokenFile)
	must(t, err)
	p.AddSecret(strings.TrimSpace(string(token)))

	// The demo host animates a session whose view URL is printed: a view
	// bootstrapped from it sees the host and its state.
	first := viewURLs.FindString(out)
	if first == "" {
		t.Fatalf("no view URL in the output:\n%s", out)
	}
	m := demoMinted(t, p, first)
	// The one-time credential is printed for the user's browser, once,
	// and logged nowhere.
	if n := strings.Count(out, m.ViewCredential); n != 1 || strings.Contains(p.Stderr(), m.ViewCredential) {
		t.Errorf("the view credential is printed %d times (want 1), in the log: %v", n, strings.Contains(p.Stderr(), m.ViewCredential))
	}
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

	// Enter prints a fresh link, which bootstraps as the first did.
	_, err = typed.Write([]byte("\n"))
	must(t, err)
	testkit.Eventually(t, "a second view URL", func() bool { return len(viewURLs.FindAllString(p.stdout.String(), -1)) == 2 })
	second := viewURLs.FindAllString(p.stdout.String(), -1)[1]
	if second == first {
		t.Fatalf("Enter printed the same view URL again")
	}
	m2 := demoMinted(t, p, second)
	if _, c := p.view(t, m2, p.bootstrap(t, m2)); !c.HostConnected {
		t.Errorf("a view of the second demo session sees no host: %+v", c)
	}

	// The end of its input does not stop the demo; the printed mint
	// command and the other instructions work against it.
	must(t, typed.Close())
	ctx, cancel := context.WithTimeout(context.Background(), cliDeadline)
	defer cancel()
	mint := exec.CommandContext(ctx, "sh", "-c", ml[1])
	mint.Env = baseEnv(t)
	mintOut, err := mint.Output()
	if err != nil || !strings.Contains(string(mintOut), p.URL()+"/local/view#") {
		t.Errorf("the printed %q: %v\n%s", ml[1], err, mintOut)
	}
	code, stdout, stderr := runCLI(t, nil, "call", "search_notes", "--broker", p.URL(), "--token-file", tokenFile, "--args", `{"query":"bounds"}`)
	if code != 0 || !strings.Contains(stdout, "bounds.md") {
		t.Errorf("following the demo's instructions: exit %d\n%s\n%s", code, stdout, stderr)
	}
	select {
	case <-p.done:
		t.Fatalf("the demo stopped (exit %d) when its input ended", p.exit)
	default:
	}
	must(t, p.cmd.Process.Signal(syscall.SIGINT))
	if code := p.Wait(30 * time.Second); code != 0 {
		t.Errorf("demo exited %d on Ctrl-C", code)
	}
	if _, err := os.Lstat(tokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the token file outlives the demo: %v", err)
	}
}

// demoMinted is the session a printed view URL opens.
func demoMinted(t *testing.T, p *proc, viewURL string) *localclient.Minted {
	t.Helper()
	u, err := url.Parse(viewURL)
	must(t, err)
	id, cred, _ := strings.Cut(u.Fragment, ".")
	return &localclient.Minted{SessionInfo: localclient.SessionInfo{WorkspaceSessionID: id, LaunchOrigin: p.URL()}, ViewCredential: cred}
}
