//go:build unix

package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// nobody is the uid a planted link is given: another user than the
// broker's (the tests run as root, which may chown).
const nobody = 65534

// linkedDir makes holder (mode holderMode) holding a link L, owned by
// owner, to a private folder of ours, and returns L and the folder.
func linkedDir(t *testing.T, holderMode os.FileMode, owner int) (link, target string) {
	t.Helper()
	base := t.TempDir()
	target = filepath.Join(base, "target")
	holder := filepath.Join(base, "holder")
	mustDo(t, os.Mkdir(target, 0o700))
	mustDo(t, os.Mkdir(holder, 0o700))
	mustDo(t, os.Chmod(holder, holderMode))
	link = filepath.Join(holder, "L")
	mustDo(t, os.Symlink(target, link))
	if err := os.Lchown(link, owner, -1); err != nil {
		t.Skipf("cannot chown a link here: %v", err)
	}
	return link, target
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A link another user owns, in a sticky world-writable folder, is one
// that user may repoint at any time: the data directory and the
// compilation cache reached through it are refused.
func TestLinkOwnedByAnotherUserRefused(t *testing.T) {
	link, _ := linkedDir(t, 0o777|os.ModeSticky, nobody)
	if root, err := Open(link); !errors.Is(err, ErrUnsafeLink) {
		if root != nil {
			root.Close()
		}
		t.Errorf("Open through another user's link: %v, want ErrUnsafeLink", err)
	}
	if _, err := PrepareCache(filepath.Join(link, "compile-cache")); !errors.Is(err, ErrUnsafeLink) {
		t.Errorf("PrepareCache through another user's link: %v, want ErrUnsafeLink", err)
	}
	if _, err := Resolve(filepath.Join(link, "x", "y")); !errors.Is(err, ErrUnsafeLink) {
		t.Errorf("Resolve through another user's link: %v, want ErrUnsafeLink", err)
	}
}

// A link of ours in a folder others may write without the sticky bit
// can be renamed away and replaced: refused too.
func TestLinkInOpenFolderRefused(t *testing.T) {
	link, _ := linkedDir(t, 0o777, os.Getuid())
	if _, err := Resolve(link); !errors.Is(err, ErrUnsafeLink) {
		t.Errorf("Resolve through a link in a world-writable folder: %v, want ErrUnsafeLink", err)
	}
}

// A link of ours in a folder only we (or, sticky, only the link's owner)
// may change is the operator's own: it is followed once, and the
// resolved path is what is used, so a later change of the link has no
// effect on what was handed on.
func TestOwnLinkResolved(t *testing.T) {
	for name, mode := range map[string]os.FileMode{"private": 0o755, "sticky": 0o777 | os.ModeSticky} {
		t.Run(name, func(t *testing.T) {
			link, target := linkedDir(t, mode, os.Getuid())
			got, err := Resolve(filepath.Join(link, "compile-cache"))
			want, _ := filepath.EvalSymlinks(target)
			if err != nil || got != filepath.Join(want, "compile-cache") {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, filepath.Join(want, "compile-cache"))
			}
			rep, err := PrepareCache(filepath.Join(link, "compile-cache"))
			if err != nil || rep.Dir != got {
				t.Fatalf("PrepareCache: dir %q, %v; want %q", rep.Dir, err, got)
			}
			root, err := Open(link)
			if err != nil {
				t.Fatalf("Open through our own link: %v", err)
			}
			root.Close()
		})
	}
}

// A link reached through another link is checked too: the target's own
// path may pass through another user's link.
func TestLinkChainChecked(t *testing.T) {
	evil, _ := linkedDir(t, 0o777|os.ModeSticky, nobody)
	outer := filepath.Join(t.TempDir(), "outer")
	mustDo(t, os.Symlink(evil, outer))
	if _, err := Resolve(outer); !errors.Is(err, ErrUnsafeLink) {
		t.Errorf("Resolve through our link to another user's link: %v, want ErrUnsafeLink", err)
	}
}
