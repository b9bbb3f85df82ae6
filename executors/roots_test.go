package executors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// rootFixture lays out
//
//	base/notes/a.txt            "hello"
//	base/notes/sub/b.txt        "nested"
//	base/notes/inlink -> a.txt  (stays inside)
//	base/notes/outlink -> ../outside/secret.txt
//	base/notes/outdir -> ../outside
//	base/outside/secret.txt     "TOP SECRET"
//
// and returns base.
func rootFixture(t *testing.T) string {
	base := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(base, "notes", "sub"), 0o755))
	must(os.MkdirAll(filepath.Join(base, "outside"), 0o755))
	must(os.WriteFile(filepath.Join(base, "notes", "a.txt"), []byte("hello"), 0o644))
	must(os.WriteFile(filepath.Join(base, "notes", "sub", "b.txt"), []byte("nested"), 0o644))
	must(os.WriteFile(filepath.Join(base, "outside", "secret.txt"), []byte("TOP SECRET"), 0o644))
	must(os.Symlink("a.txt", filepath.Join(base, "notes", "inlink")))
	must(os.Symlink("../outside/secret.txt", filepath.Join(base, "notes", "outlink")))
	must(os.Symlink("../outside", filepath.Join(base, "notes", "outdir")))
	return base
}

func TestRoots(t *testing.T) {
	base := rootFixture(t)
	b := defaultBounds()
	b.Roots = []string{"notes"}
	cfg := Config{Roots: map[string]string{"notes": filepath.Join(base, "notes")}}
	forStyles(t, cfg, b, func(t *testing.T, p *Program) {
		read := func(path string) wire.Answer {
			return call(t, p, "readfile", fmt.Sprintf(`{"path":%q}`, path))
		}
		for path, want := range map[string]string{
			"/notes/a.txt": "hello", "/notes/sub/b.txt": "nested", "/notes/inlink": "hello",
			"/notes/sub/../a.txt": "hello",
		} {
			if got := wantOK(t, read(path))["text"]; got != want {
				t.Fatalf("%s read %q, want %q", path, got, want)
			}
		}
		for _, path := range []string{
			"/notes/../outside/secret.txt",               // .. out of the mount
			"../outside/secret.txt",                      // relative to the guest's cwd
			"/notes/outlink",                             // symlink out of the root
			"/notes/outdir/secret.txt",                   // through a symlinked directory
			filepath.Join(base, "outside", "secret.txt"), // the host path
			"/etc/passwd",
			"/",
		} {
			a := read(path)
			wantRule(t, a, wire.ExecThrew)
		}
		// Writes fail, and nothing reaches the host.
		wantRule(t, call(t, p, "writefile", `{"path":"/notes/new.txt","text":"x"}`), wire.ExecThrew)
		wantRule(t, call(t, p, "writefile", `{"path":"/notes/a.txt","text":"x"}`), wire.ExecThrew)
		if _, err := os.Stat(filepath.Join(base, "notes", "new.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("guest created a file: %v", err)
		}
		if data, _ := os.ReadFile(filepath.Join(base, "notes", "a.txt")); string(data) != "hello" {
			t.Fatalf("guest changed a file: %q", data)
		}
	})
}

// TestRootsNotMountedUnlessNamed: a descriptor without roots sees no
// file system even when the operator maps roots.
func TestRootsNotMountedUnlessNamed(t *testing.T) {
	base := rootFixture(t)
	r := newRuntime(t, Config{Roots: map[string]string{"notes": filepath.Join(base, "notes")}})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	wantRule(t, call(t, p, "readfile", `{"path":"/notes/a.txt"}`), wire.ExecThrew)
}

func TestRootUnmapped(t *testing.T) {
	base := rootFixture(t)
	r := newRuntime(t, Config{Roots: map[string]string{
		"notes": filepath.Join(base, "notes"), "gone": filepath.Join(base, "missing")}})
	for _, roots := range [][]string{{"other"}, {"notes", "gone"}} {
		b := defaultBounds()
		b.Roots = roots
		_, err := r.Load(context.Background(), guestDescriptor("guest", b), testkit.Fixture(t, "silent.wasm"))
		wantReason(t, err, ReasonRootUnmapped)
		if strings.Contains(err.Error(), base) && roots[0] == "other" {
			t.Fatalf("unexpected path in error: %v", err)
		}
	}
}
