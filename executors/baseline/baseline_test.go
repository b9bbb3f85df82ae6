package baseline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
)

// Each guest fixture is compiled once (compiling is the slow part, tens
// of seconds under -race) and every behaviour is a subtest of it.

// runner compiles a fixture with a "data" root holding one file.
func runner(t *testing.T, name string) *Runner {
	t.Helper()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := New(context.Background(), testkit.Fixture(t, name), Options{Roots: map[string]string{"data": data}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

// callOK calls tool and wants want, ignoring white space around it.
func callOK(t *testing.T, r *Runner, tool, args, want string) {
	t.Helper()
	out, err := r.Call(context.Background(), tool, []byte(args))
	if err != nil || string(bytes.TrimSpace(out)) != want {
		t.Fatalf("%s: %q %v", tool, out, err)
	}
}

// common checks what both styles must do alike.
func common(t *testing.T, r *Runner) {
	ctx := context.Background()
	callOK(t, r, "echo", `{"a":1}`, `{"a":1}`)
	callOK(t, r, "readfile", `{"path":"/data/hello.txt"}`, `{"text":"hi"}`)
	if _, err := r.Call(ctx, "log", []byte(`{"msg":"x"}`)); err != nil {
		t.Fatalf("log, with the stub host module: %v", err)
	}
	if _, err := r.Call(ctx, "fetch", []byte(`{"url":"http://127.0.0.1:1/"}`)); err == nil {
		t.Fatal("fetch ran in the baseline")
	}
	if _, err := r.Call(ctx, "fail", []byte(`{}`)); err == nil {
		t.Fatal("a failing tool answered")
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	r := runner(t, "guest.wasm")
	if r.Style() != Command {
		t.Fatalf("style %s", r.Style())
	}
	common(t, r)
	if _, err := r.NewInstance(context.Background()); !errors.Is(err, ErrNotReactor) {
		t.Fatalf("instance of a command: %v", err)
	}
	if _, err := r.HTTPFloor("echo"); !errors.Is(err, ErrNotReactor) {
		t.Fatalf("HTTP floor of a command: %v", err)
	}
}

func TestReactor(t *testing.T) {
	t.Parallel()
	r := runner(t, "guest-reactor.wasm")
	if r.Style() != Reactor {
		t.Fatalf("style %s", r.Style())
	}
	common(t, r)
	ctx := context.Background()
	if _, err := r.Call(ctx, "fail", []byte(`{}`)); !errors.Is(err, ErrToolFailed) {
		t.Fatalf("fail: %v", err)
	}
	if _, err := r.Call(ctx, "fetch", []byte(`{"url":"http://127.0.0.1:1/"}`)); !errors.Is(err, ErrNoFetch) {
		t.Fatalf("fetch: %v", err)
	}
	reused(t, r)
	httpFloor(t, r)
}

// reused checks that one instance serves many calls, and that fresh
// calls are safe from several goroutines.
func reused(t *testing.T, r *Runner) {
	ctx := context.Background()
	inst, err := r.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if out, err := inst.Call(ctx, "echo", []byte(`{"n":2}`)); err != nil || string(out) != `{"n":2}` {
			t.Fatalf("%q %v", out, err)
		}
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := r.Call(ctx, "echo", []byte(`{}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestCacheDir checks that runners on one cache directory fill it and
// still run (silent.wasm is a hand-assembled command: quick to compile).
func TestCacheDir(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for range 2 {
		r, err := New(ctx, testkit.Fixture(t, "silent.wasm"), Options{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := r.Call(ctx, "any", nil); err != nil || len(out) != 0 {
			t.Fatalf("%q %v", out, err)
		}
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) == 0 {
		t.Fatal("nothing cached")
	}
}

func TestRefused(t *testing.T) {
	if _, err := New(context.Background(), testkit.Fixture(t, "noabi.wasm"), Options{}); !errors.Is(err, ErrNoStyle) {
		t.Fatalf("no ABI: %v", err)
	}
	if _, err := New(context.Background(), []byte("nope"), Options{}); err == nil {
		t.Fatal("compiled garbage")
	}
}
