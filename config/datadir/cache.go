package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// The compilation cache holds native code the broker runs as itself, and
// wazero reads it by path with no check of its own (it follows links and
// trusts every entry). PrepareCache therefore makes the folder one that
// only someone who can already run code as the broker could write:
//
//   - every existing folder above it is owned by root or the broker's user
//     and, unless sticky, not writable by group or others, so nobody else
//     can rename it away and put their own in its place after the check;
//   - the folder itself is not a link and is the broker user's;
//   - nothing inside it is a link or another user's.
//
// See RATIONALE.md, "Why is the compilation cache trusted once its
// folder is private, and why repair it rather than refuse?".

// CacheRepair says what PrepareCache changed: a folder of the broker
// user's that was open to others is closed (0700), and when others could
// write it, emptied, since any entry in it may have been planted.
type CacheRepair struct {
	Closed  []string // folders chmod'ed to 0700
	Emptied []string // folders whose entries were removed
	Dir     string   // the folder with its links resolved: hand this on, not the path given
}

// Changed reports whether anything was repaired.
func (r CacheRepair) Changed() bool { return len(r.Closed) > 0 }

// PrepareCache checks the compilation cache folder dir, creating it 0700
// when missing, repairs a folder of ours that is too open, and refuses
// everything else with an error naming the path. dir is resolved once
// (Resolve): the caller hands rep.Dir to wazero, which re-reads the path
// on every access, so a link along dir cannot be repointed later.
func PrepareCache(dir string) (CacheRepair, error) {
	var rep CacheRepair
	abs, err := resolveCacheDir(dir)
	if err != nil {
		return rep, refuse("compilation cache", dir, err)
	}
	rep.Dir = abs
	if err := checkAncestors(abs); err != nil {
		return rep, refuse("compilation cache", abs, err)
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return rep, err
		}
	}
	root, err := openCacheRoot(abs)
	if err != nil {
		return rep, refuse("compilation cache", abs, err)
	}
	defer root.Close()
	if err := tighten(root, abs, &rep); err != nil {
		return rep, err
	}
	return rep, checkCacheEntries(root, abs, &rep)
}

// openCacheRoot opens abs, which must be a folder of ours and not a link.
func openCacheRoot(abs string) (*os.Root, error) {
	li, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	switch {
	case li.Mode()&fs.ModeSymlink != 0:
		return nil, ErrLink
	case !li.IsDir():
		return nil, ErrNotDir
	case !ownedByUs(li):
		return nil, ErrNotOwned
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	if fi, err := root.Stat("."); err != nil || !os.SameFile(li, fi) {
		root.Close()
		return nil, ErrLink
	}
	return root, nil
}

// tighten closes the folder root (at path) to 0700 when it is more open,
// and empties it when group or others could write it.
func tighten(root *os.Root, path string, rep *CacheRepair) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := d.Chmod(0o700); err != nil {
		return err
	}
	rep.Closed = append(rep.Closed, path)
	if fi.Mode().Perm()&0o022 == 0 {
		return nil
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := root.RemoveAll(e.Name()); err != nil {
			return err
		}
	}
	rep.Emptied = append(rep.Emptied, path)
	return nil
}

// checkCacheEntries checks each entry of the cache folder: wazero keeps
// one folder per wazero version and platform, each holding one file per
// compiled module. A folder is tightened as the top one is; anything that
// is a link or another user's is refused.
func checkCacheEntries(root *os.Root, abs string, rep *CacheRepair) error {
	entries, err := readDir(root)
	if err != nil {
		return err
	}
	for _, name := range entries {
		path := filepath.Join(abs, name)
		li, err := root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile, by a broker sharing the cache
		}
		if err != nil {
			return err
		}
		if !li.IsDir() || !ownedByUs(li) {
			if err := checkCacheFile(li, path); err != nil {
				return err
			}
			continue
		}
		if err := checkCacheSub(root, name, li, path, rep); err != nil {
			return err
		}
	}
	return nil
}

// checkCacheSub checks one version folder and the files in it.
func checkCacheSub(root *os.Root, name string, li fs.FileInfo, path string, rep *CacheRepair) error {
	sub, err := root.OpenRoot(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer sub.Close()
	if fi, err := sub.Stat("."); err != nil || !os.SameFile(li, fi) {
		return refuse("compilation cache entry", path, ErrLink)
	}
	if err := tighten(sub, path, rep); err != nil {
		return err
	}
	files, err := readDir(sub)
	if err != nil {
		return err
	}
	for _, f := range files {
		li, err := sub.Lstat(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a temporary file renamed meanwhile by a broker sharing the cache
		}
		if err != nil {
			return err
		}
		if err := checkCacheFile(li, filepath.Join(path, f)); err != nil {
			return err
		}
	}
	return nil
}

// checkCacheFile refuses an entry that is not a regular file of ours that
// only we may write.
func checkCacheFile(li fs.FileInfo, path string) error {
	switch {
	case li.Mode()&fs.ModeSymlink != 0:
		return refuse("compilation cache entry", path, ErrLink)
	case !ownedByUs(li):
		return refuse("compilation cache entry", path, ErrNotOwned)
	case !li.Mode().IsRegular():
		return refuse("compilation cache entry", path, ErrNotRegular)
	case li.Mode().Perm()&0o022 != 0:
		return refuse("compilation cache entry", path, ErrWritable)
	}
	return nil
}

// readDir lists the names in root's own folder.
func readDir(root *os.Root) ([]string, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// resolveCacheDir is dir with the links above it resolved (Resolve);
// dir itself may not be a link.
func resolveCacheDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if li, err := os.Lstat(abs); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		return "", ErrLink
	}
	parent, err := Resolve(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(abs)), nil
}

// checkAncestors refuses abs, a path with its links resolved, when a
// folder above it could be replaced by another user. Folders that do not
// exist yet are skipped: the broker creates them 0700.
func checkAncestors(abs string) error {
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		fi, err := os.Lstat(dir)
		if err == nil && !safeAncestor(fi) {
			return ErrUnsafeParent
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if filepath.Dir(dir) == dir {
			return nil
		}
	}
}

// safeAncestor reports whether only root or the broker's user can rename
// entries in the folder fi describes.
func safeAncestor(fi fs.FileInfo) bool {
	if !ownedByRootOrUs(fi) {
		return false
	}
	return fi.Mode().Perm()&0o022 == 0 || fi.Mode()&fs.ModeSticky != 0
}
