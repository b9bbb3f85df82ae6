package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/plugins"
)

// walkStep is what a walkthrough block must do.
type walkStep struct {
	prefix     string   // the block starts with this
	exit       int      // its exit code
	stdout     []string // in its stdout
	background bool     // it ends in &: a broker, kept running
	check      func(t *testing.T, work string)
}

// TestWalkthrough follows plugins/README.md literally: every marked
// command, as written, in an empty folder outside the repository, with
// the built airlock and the test's Go toolchain on PATH, no network
// (GOPROXY=off) and a private HOME. The one change is the port: the
// broker is started on port 0 and the port it chose replaces 7420 in the
// commands after it. Each step's outcome is checked; a step added to the
// README without a check here fails the test.
func TestWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles Go to wasip1")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "plugins", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, b := range markedBlocks(t, "plugins/README.md", string(readme), "walkthrough") {
		blocks = append(blocks, b.body)
	}
	steps := walkthroughSteps()
	if len(blocks) != len(steps) {
		t.Fatalf("plugins/README.md has %d walkthrough blocks, the test knows %d:\n%s", len(blocks), len(steps), strings.Join(blocks, "\n"))
	}
	work := t.TempDir()
	env := walkthroughEnv(t)
	addr := ""
	for i, block := range blocks {
		st := steps[i]
		if !strings.HasPrefix(block, st.prefix) {
			t.Fatalf("step %d is %q, the test expects %q…", i+1, block, st.prefix)
		}
		if addr != "" {
			block = strings.ReplaceAll(block, "127.0.0.1:7420", addr)
		}
		if st.background {
			addr = startLine(t, work, env, onFreePort(block)).waitListening(t)
			continue
		}
		if strings.HasPrefix(block, "airlock call ") {
			waitListed(t, addr, filepath.Join(work, "token"), "greet")
		}
		cmd := exec.Command("bash", "-c", block)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := exitCode(cmd.Run())
		if code != st.exit {
			t.Fatalf("step %d, %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", i+1, block, code, st.exit, stdout.String(), tail(stderr.String(), 4000))
		}
		for _, want := range st.stdout {
			if !strings.Contains(stdout.String(), want) {
				t.Fatalf("step %d, %s: stdout lacks %q:\n%s", i+1, block, want, stdout.String())
			}
		}
		if st.check != nil {
			st.check(t, work)
		}
	}
}

func walkthroughSteps() []walkStep {
	greeting := `"greeting": "Welcome, Ada!"`
	return []walkStep{
		{prefix: "airlock version", stdout: []string{"airlock "}},
		{prefix: "airlock new greet", stdout: []string{"wrote greet: "}, check: func(t *testing.T, work string) {
			for _, f := range []string{"go.mod", "main.go", "plugin.json", "README.md", "sdk/go.mod", "sdk/sdk.go"} {
				if _, err := os.Stat(filepath.Join(work, "greet", f)); err != nil {
					t.Fatalf("airlock new did not write %s", f)
				}
			}
		}},
		{prefix: "(cd greet && go test .)", stdout: []string{"ok"}},
		{prefix: "perl -pi", check: func(t *testing.T, work string) {
			if src, _ := os.ReadFile(filepath.Join(work, "greet", "main.go")); !bytes.Contains(src, []byte(`"Welcome, "`)) {
				t.Fatalf("the edit did not take:\n%s", src)
			}
		}},
		{prefix: "airlock build greet", stdout: []string{"built greet/greet.wasm (reactor, go, ", "admissible as \"greet\""}, check: hashMatches},
		{prefix: `airlock run greet greet --args '{"name":"Ada"}'`, stdout: []string{`"ok": true`, greeting}},
		{prefix: `airlock run greet greet --args '{}'`, exit: exitcode.Refused, stdout: []string{`"refused": "args-invalid"`, `"why": "/name: required"`}},
		{prefix: "mkdir plugins", check: func(t *testing.T, work string) {
			if info, err := os.Stat(filepath.Join(work, "token")); err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("token: %v %v", info, err)
			}
		}},
		{prefix: "airlock serve --plugins plugins", background: true},
		{prefix: "airlock build greet --install plugins", stdout: []string{"installed into plugins"}, check: func(t *testing.T, work string) {
			data, err := os.ReadFile(filepath.Join(work, "plugins", "greet", "plugin.json"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := plugins.ParseManifest(data)
			module, _ := os.ReadFile(filepath.Join(work, "plugins", "greet", "greet.wasm"))
			if err != nil || m.SHA256 != plugins.HashModule(module) {
				t.Fatalf("installed plugin: %v", err)
			}
		}},
		{prefix: "airlock tools --plugins plugins", stdout: []string{"greet"}},
		{prefix: "airlock call greet", stdout: []string{`"ok": true`, greeting}},
	}
}

// hashMatches: plugin.json's sha256 is the module's.
func hashMatches(t *testing.T, work string) {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(work, "greet", "plugin.json"))
	module, _ := os.ReadFile(filepath.Join(work, "greet", "greet.wasm"))
	m, err := plugins.ParseManifest(data)
	if err != nil || m.SHA256 != plugins.HashModule(module) {
		t.Fatalf("plugin.json after build: %v", err)
	}
}

// walkthroughEnv is a user's environment: PATH with airlock, go and the
// base system; a private HOME; the test's Go caches (so std is not
// rebuilt); no network for Go.
func walkthroughEnv(t *testing.T) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	goEnv := func(key string) string {
		out, err := exec.Command(goBin, "env", key).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	return []string{
		"PATH=" + filepath.Dir(binPath) + ":" + filepath.Dir(goBin) + ":/usr/bin:/bin",
		"HOME=" + t.TempDir(),
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOPROXY=off",
		"GOTOOLCHAIN=local",
		"GORACE=halt_on_error=1",
	}
}

// waitListed waits until the broker at addr lists the descriptor id: it
// admits a dropped-in plugin soon after, not at once.
func waitListed(t *testing.T, addr, tokenFile, id string) {
	t.Helper()
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	c := &v1client.Client{Base: "http://" + addr, Token: strings.TrimSpace(string(token)),
		HTTP: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	testkit.Eventually(t, "the broker lists "+id, func() bool {
		ds, err := c.Tools(context.Background())
		for _, d := range ds {
			if err == nil && d.DescriptorID == id {
				return true
			}
		}
		return false
	})
}
