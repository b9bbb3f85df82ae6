package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafeLink refuses a path that passes through a symbolic link
// another user could change: the link is not root's or the broker user's,
// or the folder holding it is another user's or writable by others
// without the sticky bit.
var ErrUnsafeLink = errors.New("reached through a symbolic link another user could change (the link, or the folder holding it, is another user's, or that folder is writable by others without the sticky bit)")

// maxLinks bounds the links followed while resolving one path, as the
// kernel's own limit (ELOOP) does.
const maxLinks = 40

// errTooManyLinks refuses a path whose links do not end.
var errTooManyLinks = errors.New("too many levels of symbolic links")

// Resolve returns path made absolute with every symbolic link in it
// resolved, after checking each link on the way, component by component
// with Lstat, so that none is one another user could repoint: a path
// resolved once and handed on as such cannot be steered later. The part
// of path that does not exist yet is kept as written. See RATIONALE.md,
// "Why is the data directory resolved once?".
func Resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	links := 0
	return resolve(abs, &links)
}

// resolve is Resolve of the absolute path abs, counting links followed.
func resolve(abs string, links *int) (string, error) {
	done := filepath.VolumeName(abs) + string(filepath.Separator)
	parts := strings.Split(strings.TrimPrefix(abs, done), string(filepath.Separator))
	for i, name := range parts {
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, name)
		li, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{done}, parts[i:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if li.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if done, err = follow(done, next, li, links); err != nil {
			return "", err
		}
	}
	return done, nil
}

// follow checks the link next (information li) held by the resolved
// folder dir and returns its target, itself resolved.
func follow(dir, next string, li fs.FileInfo, links *int) (string, error) {
	if *links++; *links > maxLinks {
		return "", errTooManyLinks
	}
	hi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !ownedByRootOrUs(li) || !safeAncestor(hi) {
		return "", ErrUnsafeLink
	}
	target, err := os.Readlink(next)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return resolve(target, links)
}

// ownedByRootOrUs reports whether fi belongs to root or the broker's
// user (or the platform does not say).
func ownedByRootOrUs(fi fs.FileInfo) bool {
	owner := ownerOf(fi)
	return owner == 0 || owner == os.Getuid() || owner == -1
}
