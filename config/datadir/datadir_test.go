package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenCreatesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	root, err := Open(dir)
	must(t, err)
	root.Close()
	fi, err := os.Stat(dir)
	must(t, err)
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("created %v, want 0700", fi.Mode().Perm())
	}
}

func TestOpenRefusesOpenFolder(t *testing.T) {
	for _, mode := range []fs.FileMode{0o777, 0o770, 0o702, 0o720} {
		dir := t.TempDir()
		must(t, os.Chmod(dir, mode))
		if _, err := Open(dir); !errors.Is(err, ErrWritable) {
			t.Errorf("%v: %v, want ErrWritable", mode, err)
		}
	}
	// Readable by others is not a refusal: nothing in it is secret but
	// the pairings file, which has its own 0600 check.
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	root, err := Open(dir)
	must(t, err)
	root.Close()
}

func TestOpenRefusesAnotherUsersFolder(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	dir := t.TempDir()
	must(t, os.Chown(dir, 65534, 65534))
	if _, err := Open(dir); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("%v, want ErrNotOwned", err)
	}
}

// fixture is a private data root with an outside folder to link to.
func fixture(t *testing.T) (*os.Root, string, string) {
	dir := t.TempDir()
	root, err := Open(dir)
	must(t, err)
	t.Cleanup(func() { root.Close() })
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("outside"), 0o600))
	return root, dir, outside
}

func TestReadFileRefusesLinks(t *testing.T) {
	root, dir, outside := fixture(t)
	must(t, os.WriteFile(filepath.Join(dir, "inside"), []byte("inside"), 0o600))
	must(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "out")))
	must(t, os.Symlink("inside", filepath.Join(dir, "in")))
	for _, name := range []string{"out", "in"} {
		if _, _, err := ReadFile(root, name, 1<<20); !errors.Is(err, ErrLink) {
			t.Errorf("%s: %v, want ErrLink", name, err)
		}
	}
	data, _, err := ReadFile(root, "inside", 1<<20)
	if err != nil || string(data) != "inside" {
		t.Fatalf("a real file: %q %v", data, err)
	}
	if _, _, err := ReadFile(root, "missing", 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o700))
	if _, _, err := ReadFile(root, "d", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a folder: %v", err)
	}
}

func TestWriteFileAtomicReplacesLinkNotTarget(t *testing.T) {
	root, dir, outside := fixture(t)
	must(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "x")))
	must(t, WriteFileAtomic(root, "x", []byte("new")))
	if data, _ := os.ReadFile(filepath.Join(outside, "f")); string(data) != "outside" {
		t.Errorf("written through the link: %q", data)
	}
	fi, err := os.Lstat(filepath.Join(dir, "x"))
	must(t, err)
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("x is %v", fi.Mode())
	}
	data, _, err := ReadFile(root, "x", 1<<20)
	if err != nil || string(data) != "new" {
		t.Errorf("read back %q %v", data, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestOpenOrCreateRefusesLink(t *testing.T) {
	root, dir, outside := fixture(t)
	must(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "lock")))
	if _, err := OpenOrCreate(root, "lock"); !errors.Is(err, ErrLink) {
		t.Fatalf("%v, want ErrLink", err)
	}
	f, err := OpenOrCreate(root, "fresh")
	must(t, err)
	f.Close()
	f, err = OpenOrCreate(root, "fresh")
	must(t, err)
	f.Close()
}

func TestSub(t *testing.T) {
	root, dir, outside := fixture(t)
	sub, err := Sub(root, "made")
	must(t, err)
	sub.Close()
	if fi, _ := os.Stat(filepath.Join(dir, "made")); fi == nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made: %v", fi)
	}
	must(t, os.Symlink(outside, filepath.Join(dir, "link")))
	must(t, os.Symlink("made", filepath.Join(dir, "inlink")))
	for _, name := range []string{"link", "inlink"} {
		if _, err := Sub(root, name); !errors.Is(err, ErrLink) {
			t.Errorf("%s: %v, want ErrLink", name, err)
		}
	}
	must(t, os.Mkdir(filepath.Join(dir, "open"), 0o700))
	must(t, os.Chmod(filepath.Join(dir, "open"), 0o777))
	if _, err := Sub(root, "open"); !errors.Is(err, ErrWritable) {
		t.Errorf("open: %v, want ErrWritable", err)
	}
	if _, err := Sub(root, "../x"); err == nil {
		t.Error("escaped the root")
	}
}

// TestReadFileRefusesPipesAndHugeFiles: a pipe planted in the data
// directory is refused without waiting for a writer (the test fails by its
// own deadline instead of hanging), and a file over the reader's bound is
// refused without being read whole.
func TestReadFileRefusesPipesAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 4097), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "fits"), make([]byte, 4096), 0o600))
	root, err := Open(dir)
	must(t, err)
	defer root.Close()

	done := make(chan error, 1)
	go func() { _, _, err := ReadFile(root, "pipe", 4096); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("pipe: %v, want ErrNotRegular", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ReadFile of a pipe was still waiting after a minute")
	}
	if _, _, err := ReadFile(root, "big", 4096); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the bound: %v, want ErrTooLarge", err)
	}
	if data, _, err := ReadFile(root, "fits", 4096); err != nil || len(data) != 4096 {
		t.Errorf("a file at the bound: %d bytes, %v", len(data), err)
	}
}

func TestKeyCreatedOnceAndChecked(t *testing.T) {
	root, err := Open(t.TempDir())
	must(t, err)
	defer root.Close()
	a, err := Key(root, "k.key", 32)
	must(t, err)
	b, err := Key(root, "k.key", 32)
	must(t, err)
	if len(a) != 32 || string(a) != string(b) {
		t.Fatal("the key changed or has the wrong size")
	}
	if _, err := Key(root, "k.key", 64); !errors.Is(err, ErrKeySize) {
		t.Fatalf("wrong size: %v", err)
	}
	must(t, root.Chmod("k.key", 0o640))
	if _, err := Key(root, "k.key", 32); !errors.Is(err, ErrKeyShared) {
		t.Fatalf("shared: %v", err)
	}
}
