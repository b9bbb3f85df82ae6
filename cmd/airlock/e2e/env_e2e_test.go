package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestEnvRefusesBadStarts: the bearer never comes from argv, a bearer
// file others can read is refused, and the broker URL must be a channel
// URL.
func TestEnvRefusesBadStarts(t *testing.T) {
	t.Parallel()
	const bearer = "vbx_e2e-env-bearer-0123456789abcdef0123456789abcdef"
	open := filepath.Join(t.TempDir(), "bearer")
	must(t, os.WriteFile(open, []byte(bearer), 0o644))
	closed := filepath.Join(t.TempDir(), "bearer")
	must(t, os.WriteFile(closed, []byte(bearer), 0o600))
	url := "ws://127.0.0.1:1/channel"
	cases := map[string]struct {
		args []string
		env  []string
		want string
	}{
		"bearer as argument":  {[]string{"env", "--broker", url, bearer}, nil, "unexpected argument"},
		"no bearer":           {[]string{"env", "--broker", url}, nil, "AIRLOCK_BEARER"},
		"bearer twice":        {[]string{"env", "--broker", url, "--bearer-file", closed}, []string{"AIRLOCK_BEARER=" + bearer}, "once"},
		"open bearer file":    {[]string{"env", "--broker", url, "--bearer-file", open}, nil, "chmod 600"},
		"missing bearer file": {[]string{"env", "--broker", url, "--bearer-file", "/nonexistent/bearer"}, nil, "airlock env: --bearer-file /nonexistent/bearer: no such file\n"},
		"missing plugins":     {[]string{"env", "--broker", url, "--bearer-file", closed, "--plugins", "/nonexistent/plugins"}, nil, "airlock env: --plugins /nonexistent/plugins: no such folder\n"},
		"missing root":        {[]string{"env", "--broker", url, "--bearer-file", closed, "--root", "notes=/nonexistent/notes"}, nil, "airlock env: --root notes=/nonexistent/notes: no such folder\n"},
		"no broker":           {[]string{"env", "--bearer-file", closed}, nil, "--broker"},
		"http broker":         {[]string{"env", "--broker", "http://127.0.0.1:1/channel", "--bearer-file", closed}, nil, "--broker"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.env, append(c.args, "--data", t.TempDir())...)
			if code == 0 {
				t.Fatalf("exit 0; stdout %q", stdout)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr does not name the problem (%q):\n%s", c.want, stderr)
			}
			if strings.Contains(stdout+stderr, bearer) {
				t.Error("the bearer appears in the output")
			}
		})
	}
}

// TestEnvMistypedBearerSaysOnce: a bearer the broker does not know (one
// character off the paired one) stops the environment with exit 3 and
// one ERROR line that says the broker refused it and what to do, naming
// the bearer file; it does not guess that the pairing was removed, and
// never said it was connected.
func TestEnvMistypedBearerSaysOnce(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("lab")
	last := "A"
	if strings.HasSuffix(bearer, last) {
		last = "B"
	}
	wrong := bearer[:len(bearer)-1] + last
	env := w.startEnv(wrong, chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	if code := env.Wait(time.Minute); code != exitcode.Refused {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.Refused, env.Stderr())
	}
	var stopped []string
	for _, line := range scanLines(env.Stderr()) {
		if strings.Contains(line, `"level":"ERROR"`) {
			stopped = append(stopped, line)
		}
	}
	if len(stopped) != 1 || !strings.Contains(stopped[0], "the broker refused the bearer (1008 bearer-refused)") ||
		!strings.Contains(stopped[0], "check that --bearer-file ") || !strings.Contains(stopped[0], "airlock pair add NAME") {
		t.Errorf("want one ERROR line saying the bearer was refused and to check --bearer-file or pair again, got %q", stopped)
	}
	if strings.Contains(env.Stderr(), "made again") || strings.Count(env.Stderr(), "refused the bearer") != 1 {
		t.Errorf("the refusal is said more than once, or guessed at:\n%s", env.Stderr())
	}
	if strings.Contains(env.stdout.String(), `"event":"connected"`) || strings.Contains(env.Stderr(), `"msg":"connected"`) {
		t.Errorf("a refused environment said it was connected:\n%s\n%s", env.stdout.String(), env.Stderr())
	}
}

// TestEnvBearerFromEnvironmentAndReconnect: AIRLOCK_BEARER works; the
// environment reconnects by itself when the broker restarts, logging each
// attempt, and serves again.
func TestEnvBearerFromEnvironmentAndReconnect(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	listen := w.broker.Addr
	bearer := w.pair("lab")
	env := start(t, []string{"env", "--broker", w.channelURL(), "--plugins", chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}),
		"--data", t.TempDir()}, procOptions{Env: []string{"AIRLOCK_BEARER=" + bearer, "AIRLOCK_ENV_BACKOFF_MAX_MS=300"}, Secrets: []string{bearer, testToken}})
	w.waitServing("fx", w.bounds)
	w.broker.Stop()
	testkit.Eventually(t, "three connection attempts logged", func() bool { return strings.Count(env.Stderr(), `"msg":"connecting"`) >= 3 })
	w.broker = startServe(t, procOptions{Args: []string{"--data", w.data, "--no-builtin", "--listen", listen},
		Env: w.brokEnv, Secrets: []string{testToken, bearer}})
	w.waitServing("fx", w.bounds)
	// "connected" follows the broker's pong to a ping sent after the
	// catalog, so it may come just after the broker routes the catalog.
	testkit.Eventually(t, "a second connected event", func() bool {
		return strings.Count(env.stdout.String(), `"event":"connected"`) >= 2
	})
}

// TestEnvResendsCatalogWhenPluginsChange: a plugin dropped into a running
// environment's folder becomes callable through the broker.
func TestEnvResendsCatalogWhenPluginsChange(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	dir := chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds})
	w.startEnv(w.pair("lab"), dir)
	w.waitServing("fx", w.bounds)
	more := chanPlugins(t, map[string]wire.Bounds{"added": w.bounds})
	must(t, os.Rename(filepath.Join(more, "added"), filepath.Join(dir, "added")))
	w.waitServing("added", w.bounds)
	if got := w.tools()["added"]; got != "machine:lab" {
		t.Errorf("added at %q", got)
	}
	must(t, os.RemoveAll(filepath.Join(dir, "fx")))
	testkit.Eventually(t, "the removed plugin to be unlisted", func() bool { return w.tools()["fx"] == "" })
}
