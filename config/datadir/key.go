package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
)

// Errors of a key file (Key).
var (
	// ErrKeyShared refuses a key file group or others can read.
	ErrKeyShared = errors.New("readable by group or others (chmod 600 it)")
	// ErrKeySize refuses a key file of the wrong size.
	ErrKeySize = errors.New("not a key of the expected size")
)

// Key reads the random key of size bytes in the file name of root,
// creating it (mode 0600) the first time. A file group or others can read
// (ErrKeyShared), of the wrong size (ErrKeySize), or a link, is refused:
// a key another local user could also hold keeps nothing private.
func Key(root *os.Root, name string, size int) ([]byte, error) {
	key, err := readKey(root, name, size)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createKey(root, name, size); err == nil {
			key, err = readKey(root, name, size)
		}
	}
	return key, err
}

func readKey(root *os.Root, name string, size int) ([]byte, error) {
	data, fi, err := ReadFile(root, name, int64(size))
	switch {
	case err != nil:
		return nil, err
	case fi.Mode().Perm()&0o077 != 0:
		return nil, ErrKeyShared
	case len(data) != size:
		return nil, ErrKeySize
	}
	return data, nil
}

// createKey writes a new key to a private temporary file and links it
// into place, so a reader never sees a partial key and two brokers
// starting on one data directory end up with the same one.
func createKey(root *os.Root, name string, size int) error {
	key := make([]byte, size)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := name + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer root.Remove(tmp)
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := root.Link(tmp, name); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
