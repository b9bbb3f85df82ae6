// Package datadir opens the broker's data directory and the folders and
// files under it so that another user cannot steer the broker through
// them (PROTOCOL section 1).
//
// The directory must be owned by the broker's user and not writable by
// group or others; it is created 0700 when missing. Everything under it
// is reached through an os.Root, and no entry is followed through a
// symbolic link, even one that stays inside: a link is refused with
// ErrLink. See RATIONALE.md, "Why is the data directory refused rather
// than repaired?".
package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Sentinel errors. Each is wrapped with what was refused and its path,
// as in "data directory /x: writable by group or others (chmod go-w it)".
var (
	// ErrNotOwned refuses a folder or file that another user owns.
	ErrNotOwned = errors.New("not owned by the broker's user")
	// ErrWritable refuses a folder that group or others may write.
	ErrWritable = errors.New("writable by group or others (chmod go-w it)")
	// ErrLink refuses an entry that is a symbolic link.
	ErrLink = errors.New("a symbolic link, which is not followed")
	// ErrNotDir refuses a non-directory where a folder belongs.
	ErrNotDir = errors.New("not a directory")
	// ErrNotRegular refuses anything but a regular file where a file
	// belongs.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge refuses a file over the bound its reader gives.
	ErrTooLarge = errors.New("larger than the most read")
	// ErrUnsafeParent refuses a path inside a folder that another user
	// could rename or replace.
	ErrUnsafeParent = errors.New("inside a folder another user could replace (owned by another user, or writable by group or others without the sticky bit)")
)

// refuse names what was refused: "<what> <path>: <reason>".
func refuse(what, path string, reason error) error {
	return fmt.Errorf("%s %s: %w", what, path, reason)
}

// Open checks the data directory dir, creating it 0700 (with any missing
// parents) when it does not exist, and returns it as an os.Root. The
// check is made on the opened directory itself, so the folder checked is
// the folder used. dir may be reached through links of the operator's
// own (Resolve); one another user could repoint is refused with
// ErrUnsafeLink.
func Open(dir string) (*os.Root, error) {
	given := dir
	dir, err := Resolve(given)
	if err != nil {
		return nil, refuse("data directory", given, err)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	fi, err := root.Stat(".")
	if err == nil {
		err = checkPrivateDir(fi)
	}
	if err != nil {
		root.Close()
		return nil, refuse("data directory", dir, err)
	}
	return root, nil
}

// checkPrivateDir refuses a folder that is not the broker user's or that
// group or others may write.
func checkPrivateDir(fi fs.FileInfo) error {
	if !ownedByUs(fi) {
		return ErrNotOwned
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return ErrWritable
	}
	return nil
}

// lstatNoLink is root.Lstat(name) that refuses a symbolic link.
func lstatNoLink(root *os.Root, name string) (fs.FileInfo, error) {
	li, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		return nil, refuse("entry", name, ErrLink)
	}
	return li, nil
}

// Sub opens the folder name of root as its own Root, creating it 0700
// when missing. A link, a non-folder, or a folder another user owns or
// may write is refused.
func Sub(root *os.Root, name string) (*os.Root, error) {
	if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	li, err := lstatNoLink(root, name)
	if err != nil {
		return nil, err
	}
	if !li.IsDir() {
		return nil, refuse("folder", name, ErrNotDir)
	}
	if err := checkPrivateDir(li); err != nil {
		return nil, refuse("folder", name, err)
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	// Replaced by a link between the Lstat and the open: refused.
	if fi, err := sub.Stat("."); err != nil || !os.SameFile(li, fi) {
		sub.Close()
		return nil, refuse("folder", name, ErrLink)
	}
	return sub, nil
}

// OpenFile opens the existing file name of root with flag, refusing a
// symbolic link, a file replaced by one while it was being opened, and
// anything but a regular file. The open does not wait: a pipe planted
// there (or swapped in after the check) is refused instead of blocking
// for a writer.
func OpenFile(root *os.Root, name string, flag int) (*os.File, error) {
	li, err := lstatNoLink(root, name)
	if err != nil {
		return nil, err
	}
	if !li.Mode().IsRegular() {
		return nil, refuse("entry", name, ErrNotRegular)
	}
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !os.SameFile(li, fi):
		err = refuse("entry", name, ErrLink)
	case !fi.Mode().IsRegular():
		err = refuse("entry", name, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenOrCreate opens name read-write, creating it with mode 0600 when
// missing; an existing entry is opened as OpenFile does.
func OpenOrCreate(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return OpenFile(root, name, os.O_RDWR)
	}
	return f, err
}

// ReadFile reads the file name of root, refusing what OpenFile refuses
// and a file over limit bytes (ErrTooLarge, before reading it and again
// if it grew), and returns its contents and its information. A missing
// file is an error that matches fs.ErrNotExist.
func ReadFile(root *os.Root, name string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := OpenFile(root, name, os.O_RDONLY)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > limit {
		return nil, nil, refuse("file", name, ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = refuse("file", name, ErrTooLarge)
	}
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// WriteFileAtomic writes data to a new 0600 file beside name (created
// exclusively, so never through a link), syncs it and renames it over
// name, so a reader sees the old file or the new one. A link at name is
// replaced, not followed.
func WriteFileAtomic(root *os.Root, name string, data []byte) error {
	var suffix [8]byte
	_, _ = rand.Read(suffix[:]) // never fails (crypto/rand)
	tmp := "." + name + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer root.Remove(tmp) // fails harmlessly after the rename
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		return err
	}
	if d, err := root.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
