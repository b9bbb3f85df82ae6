package receipts

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
)

// KeyFile holds, in the data directory, the key of the args HMAC: 32
// random bytes, mode 0600, made on first use.
const KeyFile = "receipts.key"

const keyBytes = 32

// loadKey reads the key, creating it the first time. A file group or
// others can read, or one of the wrong size, is refused: the HMAC is only
// as private as its key.
func loadKey(root *os.Root) ([]byte, error) {
	key, err := readKey(root)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createKey(root); err == nil {
			key, err = readKey(root)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKey, KeyFile, err)
	}
	return key, nil
}

func readKey(root *os.Root) ([]byte, error) {
	data, fi, err := datadir.ReadFile(root, KeyFile, keyBytes)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode().Perm()&0o077 != 0:
		return nil, errors.New("readable by group or others (chmod 600 it)")
	case len(data) != keyBytes:
		return nil, errors.New("does not hold a 256-bit key")
	}
	return data, nil
}

// createKey writes a new key to a private temporary file and links it
// into place, so a reader never sees a partial key and two brokers
// starting on one data directory end up with the same one.
func createKey(root *os.Root) error {
	key := make([]byte, keyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := "." + KeyFile + ".tmp-" + hex.EncodeToString(suffix[:])
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
	if err := root.Link(tmp, KeyFile); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// argsHMAC is the hex HMAC-SHA256 of args' canonical JSON (sorted keys,
// no white space): the same arguments sent with other spacing or key
// order have the same HMAC.
func argsHMAC(key, args []byte) string {
	canon, err := wire.Canonical(args)
	if err != nil {
		canon = args // a call's args are valid JSON; this is never reached
	}
	m := hmac.New(sha256.New, key)
	m.Write(canon)
	return hex.EncodeToString(m.Sum(nil))
}
