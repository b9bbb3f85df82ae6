package session

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/config/datadir"
)

// StorageKeyFile holds, in the data directory, the key the view page
// seals what it stores in the browser with (PROTOCOL section 3.1). It is
// the broker's, not a session's: notes stored under one session are read
// under the next, after a restart too.
const StorageKeyFile = ".view-storage.key"

// storageKeyBytes is the key's size: AES-256.
const storageKeyBytes = 32

// Errors of the storage key file.
var (
	ErrStorageKeyShared = errors.New("session: the view storage key file is readable by group or others (chmod 600 it)")
	ErrStorageKeySize   = errors.New("session: the view storage key file does not hold a 256-bit key")
)

// LoadStorageKey reads the view storage key from the data directory,
// creating it (random, mode 0600) the first time. A file group or others
// can read, a link, or one of the wrong size is refused: a broker must
// not hand pages a key another local user could also hold.
func LoadStorageKey(dataDir string) ([]byte, error) {
	root, err := datadir.Open(dataDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	key, err := readStorageKey(root)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createStorageKey(root); err == nil {
			key, err = readStorageKey(root)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("view storage key %s: %w", StorageKeyFile, err)
	}
	return key, nil
}

func readStorageKey(root *os.Root) ([]byte, error) {
	data, fi, err := datadir.ReadFile(root, StorageKeyFile, storageKeyBytes)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode().Perm()&0o077 != 0:
		return nil, ErrStorageKeyShared
	case len(data) != storageKeyBytes:
		return nil, ErrStorageKeySize
	}
	return data, nil
}

// createStorageKey writes a new key to a private temporary file and links
// it into place, so a reader never sees a partial key and two brokers
// starting on one data directory end up with the same one.
func createStorageKey(root *os.Root) error {
	key := make([]byte, storageKeyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := StorageKeyFile + ".tmp-" + hex.EncodeToString(suffix[:])
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
	if err := root.Link(tmp, StorageKeyFile); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// StorageKeyRequest is the body of POST /local/storage-key.
type StorageKeyRequest struct {
	ViewKey string `json:"viewKey"`
}

// StorageKeyResponse is its 200 body: the key, URL-safe base64.
type StorageKeyResponse struct {
	StorageKey string `json:"storageKey"`
}

// serveStorageKey hands the view storage key to a view page that proves
// what a view socket proves: the view cookie of a live session, its
// launch origin, and that session's view key, which is required here
// even with local.view_key off. Refusals as bootstrap's.
func (s *Service) serveStorageKey(w http.ResponseWriter, r *http.Request) {
	var req StorageKeyRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.refuseHTTP(w, r, contract.InvalidMessage)
		return
	}
	if len(s.opts.StorageKey) == 0 {
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	sess, role, err := s.store.authenticate(r.Cookies(), requestOrigin(r), false)
	if err == nil && (role != contract.View || !s.store.viewKeyMatches(sess, req.ViewKey)) {
		err = ErrNoViewKey
	}
	if err != nil {
		s.refuseHTTP(w, r, codeOf(err))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, StorageKeyResponse{base64.RawURLEncoding.EncodeToString(s.opts.StorageKey)})
}
