package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
)

// The data directory (PROTOCOL section 1): a folder that is not the
// broker user's, or that group or others may write, is refused at
// start-up with exit 2; nothing under it is followed through a symbolic
// link; the compilation cache is kept private.

// exitBeforeListening waits for p to exit by itself and returns its exit
// code; a broker that prints its listening line instead has started on a
// folder it had to refuse, which fails the test.
func exitBeforeListening(t *testing.T, p *proc) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return p.exit
		case <-time.After(20 * time.Millisecond):
		}
		if strings.Contains(p.stdout.String(), `"event":"listening"`) {
			t.Fatalf("the broker started; stderr:\n%s", tail(p.Stderr(), 4000))
		}
	}
	t.Fatalf("airlock neither exited nor listened in time; stderr:\n%s", tail(p.Stderr(), 4000))
	return -1
}

// refusedAtStart runs args (a command that would otherwise keep running)
// and checks it exits 2 with one "airlock …" line naming want.
func refusedAtStart(t *testing.T, env []string, want string, args ...string) {
	t.Helper()
	p := start(t, args, procOptions{Env: env})
	code := exitBeforeListening(t, p)
	lines := scanLines(p.Stderr())
	if code != exitcode.Usage || len(lines) != 1 || !strings.HasPrefix(lines[0], "airlock ") || !strings.Contains(lines[0], want) {
		t.Errorf("%v: exit %d, want %d with one line naming %q; stderr:\n%s", args[:2], code, exitcode.Usage, want, p.Stderr())
	}
}

// commandsOnData are the commands that take --data, as each is run
// against a given data folder until it would serve.
func commandsOnData(t *testing.T, data string) map[string][]string {
	plugins := t.TempDir()
	return map[string][]string{
		"serve":      {"serve", "--listen", "127.0.0.1:0", "--no-builtin", "--data", data},
		"env":        {"env", "--broker", "ws://127.0.0.1:1/channel", "--data", data},
		"pair ls":    {"pair", "ls", "--data", data},
		"pair add":   {"pair", "add", "lab", "--data", data},
		"tools":      {"tools", "--plugins", plugins, "--no-builtin", "--data", data},
		"serve(env)": {"serve", "--listen", "127.0.0.1:0", "--no-builtin"},
	}
}

func TestDataDirWritableByOthersRefused(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	must(t, os.Mkdir(data, 0o700))
	must(t, os.Chmod(data, 0o777))
	for name, args := range commandsOnData(t, data) {
		t.Run(name, func(t *testing.T) {
			env := []string{"AIRLOCK_BEARER=vbx_not-used", "AIRLOCK_DATA=" + data}
			refusedAtStart(t, env, "writable by group or others", args...)
		})
	}
	// Group-writable alone is refused too, and nothing was written.
	must(t, os.Chmod(data, 0o770))
	refusedAtStart(t, nil, "writable by group or others", "serve", "--listen", "127.0.0.1:0", "--no-builtin", "--data", data)
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("a refused data folder was written to: %v", entries)
	}
	// The positive control: the same folder, once private, is used.
	must(t, os.Chmod(data, 0o700))
	p := startServe(t, procOptions{Args: []string{"--no-builtin", "--data", data}})
	p.Stop()
}

func TestDataDirOwnedByAnotherUserRefused(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to give a folder to another user (CI runs as root)")
	}
	const nobody = 65534
	data := filepath.Join(t.TempDir(), "data")
	must(t, os.Mkdir(data, 0o700))
	must(t, os.Chown(data, nobody, nobody))
	for name, args := range commandsOnData(t, data) {
		t.Run(name, func(t *testing.T) {
			env := []string{"AIRLOCK_BEARER=vbx_not-used", "AIRLOCK_DATA=" + data}
			refusedAtStart(t, env, "not owned by", args...)
		})
	}
	// A compilation cache of another user's is refused, demo's included.
	cache := filepath.Join(t.TempDir(), "cache")
	must(t, os.Mkdir(cache, 0o700))
	must(t, os.Chown(cache, nobody, nobody))
	env := []string{"AIRLOCK_EXEC_CACHE_DIR=" + cache}
	refusedAtStart(t, env, "not owned by", "serve", "--listen", "127.0.0.1:0", "--no-builtin", "--data", t.TempDir())
	refusedAtStart(t, env, "not owned by", "demo", "--listen", "127.0.0.1:0")
}

// A data folder created by the broker is 0700.
func TestDataDirCreatedPrivate(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "new", "data")
	p := startServe(t, procOptions{Args: []string{"--no-builtin", "--data", data}})
	p.Stop()
	info, err := os.Stat(data)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data folder: %v %v", info.Mode(), err)
	}
}

func TestDataDirPairingsSymlinkNotFollowed(t *testing.T) {
	t.Parallel()
	// A valid pairings file outside the data folder, and a link to it.
	src := filepath.Join(t.TempDir(), "src")
	if code, _, errOut := runCLI(t, nil, "pair", "add", "planted", "--data", src); code != 0 {
		t.Fatalf("pair add: %d %s", code, errOut)
	}
	outside := filepath.Join(src, ".pairings.json")
	before, err := os.ReadFile(outside)
	must(t, err)
	data := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(data, ".pairings.json")))

	code, out, errOut := runCLI(t, nil, "pair", "ls", "--data", data)
	if code == 0 || strings.Contains(out, "planted") || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("pair ls through a link: exit %d stdout %q stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, nil, "pair", "add", "lab", "--data", data)
	if code == 0 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("pair add through a link: exit %d stderr %q", code, errOut)
	}
	if after, _ := os.ReadFile(outside); string(after) != string(before) {
		t.Errorf("pair add wrote through the link:\n%s", after)
	}
	// The broker does not use it either: it says so and pairs nothing.
	p := startServe(t, procOptions{Args: []string{"--no-builtin", "--data", data}})
	p.waitStderr("pairings file not used")
	if strings.Contains(p.Stderr(), `"pairings loaded"`) {
		t.Errorf("the broker used a linked pairings file:\n%s", tail(p.Stderr(), 4000))
	}
	// The positive control: the same file, copied in, is used.
	p.Stop()
	must(t, os.Remove(filepath.Join(data, ".pairings.json")))
	must(t, os.WriteFile(filepath.Join(data, ".pairings.json"), before, 0o600))
	if code, out, _ := runCLI(t, nil, "pair", "ls", "--data", data); code != 0 || !strings.HasPrefix(out, "planted\t") {
		t.Errorf("pair ls on a real file: exit %d %q", code, out)
	}
}

func TestDataDirCacheSymlinkNotFollowed(t *testing.T) {
	t.Parallel()
	for _, link := range []string{"compile-cache", "compile-cache/wazero-planted"} {
		t.Run(link, func(t *testing.T) {
			data := t.TempDir()
			outside := t.TempDir()
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(data, link)), 0o700))
			must(t, os.Symlink(outside, filepath.Join(data, link)))
			// AIRLOCK_EXEC_CACHE_DIR empty: the cache is DATA/compile-cache.
			refusedAtStart(t, []string{"AIRLOCK_EXEC_CACHE_DIR="}, "symbolic link",
				"serve", "--listen", "127.0.0.1:0", "--data", data)
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("the broker wrote through the link: %v", entries)
			}
		})
	}
}

func TestDataDirCatalogsSymlinkNotFollowed(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if code, _, errOut := runCLI(t, nil, "pair", "add", "lab", "--data", data); code != 0 {
		t.Fatalf("pair add: %d %s", code, errOut)
	}
	// A remembered catalog for lab, in a folder the catalogs entry links to.
	outside := t.TempDir()
	catalog := `{"type":"catalog","descriptors":[]}` + "\n"
	must(t, os.WriteFile(filepath.Join(outside, "lab.json"), []byte(catalog), 0o600))
	must(t, os.Symlink(outside, filepath.Join(data, "catalogs")))
	p := startServe(t, procOptions{Args: []string{"--no-builtin", "--data", data}})
	// The broker reads remembered catalogs while loading pairings, before
	// it listens: by now it has tried, and said why it did not use it.
	p.waitStderr("remembered catalog unreadable")
	if !strings.Contains(p.Stderr(), "symbolic link") {
		t.Errorf("the broker read a catalog through a link:\n%s", tail(p.Stderr(), 4000))
	}
}

func TestDataDirCacheLooseModeRepaired(t *testing.T) {
	t.Parallel()
	cache := filepath.Join(t.TempDir(), "cache")
	planted := filepath.Join(cache, "wazero-planted", "0123")
	must(t, os.MkdirAll(filepath.Dir(planted), 0o700))
	must(t, os.WriteFile(planted, []byte("int3"), 0o600))
	must(t, os.Chmod(cache, 0o770))
	p := startServe(t, procOptions{Args: []string{"--no-builtin"}, Env: []string{"AIRLOCK_EXEC_CACHE_DIR=" + cache}})
	p.Stop()
	info, err := os.Stat(cache)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("cache folder after start: %v %v", info.Mode(), err)
	}
	if _, err := os.Lstat(planted); err == nil {
		t.Error("an entry written while the cache folder was group-writable survived")
	}
	if !strings.Contains(p.Stderr(), "compilation cache") {
		t.Errorf("the repair was not logged:\n%s", tail(p.Stderr(), 4000))
	}
}

// A data folder reached through a link another user owns, in a sticky
// world-writable folder, is one that user may repoint after the checks
// (and then the broker would write, and read back as native code, the
// compilation cache in that user's folder): refused at start-up. The
// same link, once root's, is followed once and used.
func TestDataDirThroughAnotherUsersLinkRefused(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to give a link to another user (CI runs as root)")
	}
	const nobody = 65534
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	sticky := filepath.Join(base, "sticky")
	must(t, os.Mkdir(victim, 0o700))
	must(t, os.Mkdir(sticky, 0o700))
	must(t, os.Chmod(sticky, 0o777|os.ModeSticky))
	link := filepath.Join(sticky, "L")
	must(t, os.Symlink(victim, link))
	must(t, os.Lchown(link, nobody, nobody))
	env := []string{"AIRLOCK_EXEC_CACHE_DIR="}
	for name, args := range commandsOnData(t, link) {
		t.Run(name, func(t *testing.T) {
			env := append([]string{"AIRLOCK_BEARER=vbx_not-used", "AIRLOCK_DATA=" + link}, env...)
			refusedAtStart(t, env, "symbolic link another user could change", args...)
		})
	}
	cache := filepath.Join(link, "cache")
	refusedAtStart(t, []string{"AIRLOCK_EXEC_CACHE_DIR=" + cache}, "symbolic link another user could change",
		"serve", "--listen", "127.0.0.1:0", "--no-builtin", "--data", t.TempDir())
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Errorf("the broker wrote through another user's link: %v", entries)
	}
	// The positive control: the link made root's is followed, and the
	// compilation cache is where it pointed.
	must(t, os.Lchown(link, 0, 0))
	p := startServe(t, procOptions{Args: []string{"--no-builtin", "--data", link}, Env: env})
	p.Stop()
	if _, err := os.Stat(filepath.Join(victim, "compile-cache")); err != nil {
		t.Errorf("the broker did not use the folder its own link points to: %v", err)
	}
}
