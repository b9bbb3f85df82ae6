package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestPrepareCacheCreatesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "compile-cache")
	rep, err := PrepareCache(dir)
	must(t, err)
	if rep.Changed() {
		t.Errorf("a new folder was repaired: %+v", rep)
	}
	if fi, _ := os.Stat(dir); fi == nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created: %v", fi)
	}
}

// A cache as wazero leaves it passes unchanged, entries kept.
func TestPrepareCacheKeepsGoodEntries(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o700)) // t.TempDir's folders are 0755
	entry := filepath.Join(dir, "wazero-v1-amd64-linux", "00ff")
	must(t, os.Mkdir(filepath.Dir(entry), 0o700))
	must(t, os.WriteFile(entry, []byte("code"), 0o600))
	rep, err := PrepareCache(dir)
	must(t, err)
	if rep.Changed() {
		t.Errorf("repaired: %+v", rep)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Errorf("entry gone: %v", err)
	}
}

func TestPrepareCacheRefusesLinks(t *testing.T) {
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "00ff"), []byte("int3"), 0o600))
	cases := map[string]func(dir string) string{
		"the folder": func(dir string) string {
			link := filepath.Join(dir, "cache")
			must(t, os.Symlink(outside, link))
			return link
		},
		"a version folder": func(dir string) string {
			must(t, os.Symlink(outside, filepath.Join(dir, "wazero-v1-amd64-linux")))
			return dir
		},
		"an entry": func(dir string) string {
			sub := filepath.Join(dir, "wazero-v1-amd64-linux")
			must(t, os.Mkdir(sub, 0o700))
			must(t, os.Symlink(filepath.Join(outside, "00ff"), filepath.Join(sub, "00ff")))
			return dir
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := setup(t.TempDir())
			if _, err := PrepareCache(dir); !errors.Is(err, ErrLink) {
				t.Fatalf("%v, want ErrLink", err)
			}
		})
	}
}

// A folder of ours open to group or others is closed, and emptied when
// they could write it; readable-only is closed and kept.
func TestPrepareCacheRepairsLooseFolder(t *testing.T) {
	for _, tc := range []struct {
		mode    os.FileMode
		emptied bool
	}{{0o770, true}, {0o707, true}, {0o755, false}} {
		dir := t.TempDir()
		entry := filepath.Join(dir, "wazero-v1-amd64-linux", "00ff")
		must(t, os.Mkdir(filepath.Dir(entry), 0o700))
		must(t, os.WriteFile(entry, []byte("code"), 0o600))
		must(t, os.Chmod(dir, tc.mode))
		rep, err := PrepareCache(dir)
		must(t, err)
		if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 || !rep.Changed() {
			t.Errorf("%v: now %v, repair %+v", tc.mode, fi.Mode().Perm(), rep)
		}
		if _, err := os.Stat(entry); (err == nil) == tc.emptied {
			t.Errorf("%v: entry kept=%v, want emptied=%v", tc.mode, err == nil, tc.emptied)
		}
	}
	// An open version folder is emptied the same way.
	dir := t.TempDir()
	sub := filepath.Join(dir, "wazero-v1-amd64-linux")
	must(t, os.Mkdir(sub, 0o700))
	must(t, os.WriteFile(filepath.Join(sub, "00ff"), []byte("code"), 0o600))
	must(t, os.Chmod(sub, 0o777))
	rep, err := PrepareCache(dir)
	must(t, err)
	if entries, _ := os.ReadDir(sub); len(entries) != 0 || len(rep.Emptied) != 1 {
		t.Errorf("open version folder: %v, %+v", entries, rep)
	}
}

func TestPrepareCacheRefusesWritableEntry(t *testing.T) {
	dir := t.TempDir()
	entry := filepath.Join(dir, "wazero-v1-amd64-linux", "00ff")
	must(t, os.Mkdir(filepath.Dir(entry), 0o700))
	must(t, os.WriteFile(entry, []byte("code"), 0o600))
	must(t, os.Chmod(entry, 0o666))
	if _, err := PrepareCache(dir); !errors.Is(err, ErrWritable) {
		t.Fatalf("%v, want ErrWritable", err)
	}
}

func TestPrepareCacheRefusesUnsafeParent(t *testing.T) {
	open := t.TempDir()
	must(t, os.Chmod(open, 0o777)) // no sticky bit: anyone could rename
	if _, err := PrepareCache(filepath.Join(open, "cache")); !errors.Is(err, ErrUnsafeParent) {
		t.Fatalf("%v, want ErrUnsafeParent", err)
	}
	// Through a link whose target sits in that folder, too.
	target := filepath.Join(open, "real")
	must(t, os.Mkdir(target, 0o700))
	link := filepath.Join(t.TempDir(), "link")
	must(t, os.Symlink(target, link))
	if _, err := PrepareCache(filepath.Join(link, "cache")); !errors.Is(err, ErrUnsafeParent) {
		t.Fatalf("through a link: %v, want ErrUnsafeParent", err)
	}
	// Sticky (as /tmp is) is safe.
	must(t, os.Chmod(open, 0o777|os.ModeSticky))
	if _, err := PrepareCache(filepath.Join(open, "cache")); err != nil {
		t.Fatalf("sticky parent: %v", err)
	}
}

func TestPrepareCacheRefusesAnotherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "wazero-v1-amd64-linux")
	must(t, os.Mkdir(sub, 0o700))
	must(t, os.Chown(sub, 65534, 65534))
	if _, err := PrepareCache(dir); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("a version folder: %v, want ErrNotOwned", err)
	}
	must(t, os.Chown(dir, 65534, 65534))
	if _, err := PrepareCache(dir); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("the folder: %v, want ErrNotOwned", err)
	}
	parent := t.TempDir()
	must(t, os.Chown(parent, 65534, 65534))
	if _, err := PrepareCache(filepath.Join(parent, "cache")); !errors.Is(err, ErrUnsafeParent) {
		t.Fatalf("a parent: %v, want ErrUnsafeParent", err)
	}
}

// Brokers share a cache folder: one starting while another writes entries
// (a temporary file renamed into place, as wazero does) must not be
// refused because a file vanished between the listing and its check.
func TestPrepareCacheWhileAnotherWrites(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o700))
	sub := filepath.Join(dir, "wazero-v1-amd64-linux")
	must(t, os.Mkdir(sub, 0o700))
	done, stop := make(chan error, 1), make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		for i := range 500 {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			tmp := filepath.Join(sub, fmt.Sprintf("%04x.tmp", i))
			if err := os.WriteFile(tmp, []byte("code"), 0o600); err != nil {
				done <- err
				return
			}
			if err := os.Rename(tmp, filepath.Join(sub, "entry")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for {
		select {
		case err := <-done:
			done <- nil // for the cleanup
			must(t, err)
			return
		default:
		}
		if _, err := PrepareCache(dir); err != nil {
			t.Fatalf("while another broker writes: %v", err)
		}
	}
}
