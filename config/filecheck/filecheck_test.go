package filecheck

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadRefusesWhatIsNotASmallFile: a link (even to a good file), a
// link to /dev/zero, a pipe, a folder and a file over the bound are each
// refused by name, without blocking; a file at the bound is read whole.
func TestReadRefusesWhatIsNotASmallFile(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "ok"), []byte("12345678"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "big"), []byte("123456789"), 0o644))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
	must(os.Symlink("ok", filepath.Join(dir, "link")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "folder"), 0o755))
	for name, want := range map[string]string{
		"zero":   "zero is a symbolic link; put the file itself there",
		"link":   "link is a symbolic link",
		"fifo":   "fifo is not a regular file (a pipe); put a file there",
		"folder": "folder is not a regular file (a folder)",
		"big":    "big is over 8 bytes",
	} {
		_, err := Read(Dir(dir), name, 8)
		if !errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal %q", name, err, want)
		}
		_, err = ReadPath(filepath.Join(dir, name), 8)
		if !errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), filepath.Join(dir, want)) {
			t.Errorf("ReadPath %s: %v, want a refusal naming the path", name, err)
		}
	}
	if data, err := ReadPath(filepath.Join(dir, "ok"), 8); err != nil || string(data) != "12345678" {
		t.Errorf("ok: %q %v", data, err)
	}
	if _, err := ReadPath(filepath.Join(dir, "absent"), 8); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRefused) {
		t.Errorf("absent: %v, want the file system's not-exist", err)
	}
}

// TestDirOpensAPipeWithoutWaiting: a pipe that slipped past the entry
// check (swapped in after it) is opened without a writer and then refused
// by the open file's check.
func TestDirOpensAPipeWithoutWaiting(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Dir(dir).Open("fifo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := check("fifo", fi, 8); !errors.Is(err, ErrRefused) {
		t.Errorf("the open pipe passed the check: %v", err)
	}
}

// TestReadOfAnFSWithoutLinks: an fs.FS that cannot tell links (the
// embedded bundled plugins) is read with the other checks.
func TestReadOfAnFSWithoutLinks(t *testing.T) {
	fsys := fstest.MapFS{"a": {Data: []byte("abc")}, "b": {Data: []byte("abcdefghij")}}
	if data, err := Read(fsys, "a", 8); err != nil || string(data) != "abc" {
		t.Errorf("a: %q %v", data, err)
	}
	if _, err := Read(fsys, "b", 8); !errors.Is(err, ErrRefused) {
		t.Errorf("b: %v, want over the bound", err)
	}
}
