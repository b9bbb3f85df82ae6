package session

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

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
	key, err := datadir.Key(root, StorageKeyFile, storageKeyBytes)
	switch {
	case errors.Is(err, datadir.ErrKeyShared):
		err = ErrStorageKeyShared
	case errors.Is(err, datadir.ErrKeySize):
		err = ErrStorageKeySize
	}
	if err != nil {
		return nil, fmt.Errorf("view storage key %s: %w", StorageKeyFile, err)
	}
	return key, nil
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
