// Package filecheck reads the files an operator or a plugin author points
// Airlock at (plugin.json, a plugin's module, the YAML config file) with one
// set of checks: a regular file, not a symbolic link, at most a bound. A
// link to /dev/zero, a pipe or a huge file is refused by name before a byte
// is read, instead of blocking or filling memory. Every reader of those
// files goes through Read, so the catalog, `airlock build`, `airlock run`
// and the config loader refuse the same files the same way.
package filecheck

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrRefused matches every refusal of Read (errors.Is); the file system's
// own errors (a missing file) pass through unwrapped by it.
var ErrRefused = errors.New("filecheck: refused")

// refusal is a one-line message naming the file and the fix, matched to
// ErrRefused without that sentinel's words in it.
type refusal struct{ msg string }

func (e *refusal) Error() string        { return e.msg }
func (e *refusal) Is(target error) bool { return target == ErrRefused }

func refusef(format string, a ...any) error { return &refusal{fmt.Sprintf(format, a...)} }

// Read reads the file name of fsys, refusing a symbolic link (when fsys can
// tell one: fs.Lstat), anything but a regular file (a device, a pipe, a
// folder) and a file over limit bytes. The entry is checked before it is
// opened and the open file again (a file swapped in between is refused),
// and the read itself stops at limit+1 bytes, so a file that grows is
// refused too. Messages name name as given.
func Read(fsys fs.FS, name string, limit int64) ([]byte, error) {
	return read(fsys, name, name, limit)
}

// ReadPath is Read of the file at path, through Dir; messages name path.
func ReadPath(path string, limit int64) ([]byte, error) {
	return read(Dir(filepath.Dir(path)), filepath.Base(path), path, limit)
}

// read is Read with label, the file's name in messages.
func read(fsys fs.FS, name, label string, limit int64) ([]byte, error) {
	li, err := fs.Lstat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := check(label, li, limit); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(label, fi, limit); err != nil {
		return nil, err
	}
	if !sameFile(li, fi) {
		return nil, refusef("%s was replaced while it was opened; put the file itself there", label)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooBig(label, limit)
	}
	return data, nil
}

func check(name string, info fs.FileInfo, limit int64) error {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return refusef("%s is a symbolic link; put the file itself there", name)
	case !info.Mode().IsRegular():
		return refusef("%s is not a regular file (%s); put a file there", name, kind(info.Mode()))
	case info.Size() > limit:
		return tooBig(name, limit)
	}
	return nil
}

func tooBig(name string, limit int64) error {
	return refusef("%s is over %d bytes, the most read; make it smaller", name, limit)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// sameFile compares the entry checked with the file opened where both come
// from the operating system; an fs.FS of its own (the embedded bundled
// plugins) has no links or pipes to swap in.
func sameFile(a, b fs.FileInfo) bool {
	sa, okA := a.Sys().(*syscall.Stat_t)
	sb, okB := b.Sys().(*syscall.Stat_t)
	if !okA || !okB {
		return true
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Dir is os.DirFS(dir) whose Open does not wait: a pipe swapped in after
// the check is opened without blocking for a writer (and then refused), as
// os.DirFS's plain open would block on it forever. It answers fs.Lstat.
func Dir(dir string) fs.FS { return dirFS{os.DirFS(dir).(dirFSBase), dir} }

// dirFSBase is what os.DirFS returns that dirFS keeps: Stat, ReadDir and
// the link methods (not ReadFile, whose open would block).
type dirFSBase interface {
	fs.StatFS
	fs.ReadDirFS
	fs.ReadLinkFS
}

type dirFS struct {
	dirFSBase
	dir string
}

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := os.OpenFile(filepath.Join(d.dir, filepath.FromSlash(name)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}
