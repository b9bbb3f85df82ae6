package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start follows dir, sending on the returned channel per OnChange call.
func start(t *testing.T, dir string, o Options) (*Watcher, chan struct{}) {
	t.Helper()
	calls := make(chan struct{}, 64)
	o.OnChange = func(context.Context) { calls <- struct{}{} }
	w, err := Start(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w, calls
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) string {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func waitCall(t *testing.T, calls chan struct{}) {
	t.Helper()
	select {
	case <-calls:
	case <-time.After(60 * time.Second):
		t.Fatal("no OnChange call")
	}
}

func noCall(t *testing.T, calls chan struct{}, within time.Duration) {
	t.Helper()
	select {
	case <-calls:
		t.Fatal("an unexpected OnChange call")
	case <-time.After(within):
	}
}

func TestBurstIsOneCall(t *testing.T) {
	dir := t.TempDir()
	_, calls := start(t, dir, Options{Settle: 300 * time.Millisecond})
	for i := range 20 {
		write(t, filepath.Join(dir, fmt.Sprint("f", i)))
	}
	waitCall(t, calls)
	noCall(t, calls, time.Second)
}

func TestMatchFiltersChanges(t *testing.T) {
	dir := t.TempDir()
	_, calls := start(t, dir, Options{Settle: 20 * time.Millisecond,
		Match: func(p string) bool { return filepath.Base(p) == "wanted" }})
	write(t, filepath.Join(dir, "other"))
	noCall(t, calls, 300*time.Millisecond)
	write(t, filepath.Join(dir, "wanted"))
	waitCall(t, calls)
}

func TestSubfoldersAreFollowed(t *testing.T) {
	dir := t.TempDir()
	old := mkdir(t, filepath.Join(dir, "old"))
	_, calls := start(t, dir, Options{Settle: 100 * time.Millisecond, Subfolders: true})
	write(t, filepath.Join(old, "f")) // inside a folder there at Start
	waitCall(t, calls)
	fresh := mkdir(t, filepath.Join(dir, "new"))
	waitCall(t, calls)
	write(t, filepath.Join(fresh, "f")) // inside a folder created since
	waitCall(t, calls)
}

func TestSubfoldersOffIgnoresNestedChanges(t *testing.T) {
	dir := t.TempDir()
	sub := mkdir(t, filepath.Join(dir, "sub"))
	_, calls := start(t, dir, Options{Settle: 20 * time.Millisecond})
	write(t, filepath.Join(sub, "f"))
	noCall(t, calls, 300*time.Millisecond)
}

// TestStopEndsTheGoroutine stops a watcher during an OnChange call: Stop
// cancels the call's ctx and returns once the goroutine is gone (goleak
// checks), and a second Stop is harmless.
func TestStopEndsTheGoroutine(t *testing.T) {
	dir := t.TempDir()
	inside := make(chan struct{})
	w, err := Start(context.Background(), dir, Options{Settle: 10 * time.Millisecond,
		OnChange: func(ctx context.Context) { close(inside); <-ctx.Done() }})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "f"))
	select {
	case <-inside:
	case <-time.After(60 * time.Second):
		t.Fatal("no OnChange call")
	}
	w.Stop()
	w.Stop()
}

func TestContextEndStopsTheWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Start(ctx, t.TempDir(), Options{Settle: time.Millisecond, OnChange: func(context.Context) {}})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-w.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the watcher outlived its context")
	}
}

func TestStartRefusesAMissingFolder(t *testing.T) {
	if _, err := Start(context.Background(), filepath.Join(t.TempDir(), "nope"), Options{}); err == nil {
		t.Fatal("no error for a missing folder")
	}
}
