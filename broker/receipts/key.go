package receipts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"sync"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
)

// KeyFile holds, in the data directory, the key of the args HMAC: 32
// random bytes, mode 0600, made on first use.
const KeyFile = "receipts.key"

const keyBytes = 32

// loadKey reads the key, creating it the first time (datadir.Key): the
// HMAC is only as private as its key.
func loadKey(root *os.Root) ([]byte, error) {
	key, err := datadir.Key(root, KeyFile, keyBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKey, KeyFile, err)
	}
	return key, nil
}

// argsHMAC is the hex HMAC-SHA256 of args' canonical JSON (sorted keys,
// no white space): the same arguments sent with other spacing or key
// order have the same HMAC. macs holds HMACs keyed with the log's key,
// reset after each use: keying one costs two hashers and two blocks of
// hashing.
func argsHMAC(macs *sync.Pool, args []byte) string {
	canon, err := wire.Canonical(args)
	if err != nil {
		canon = args // a call's args are valid JSON; this is never reached
	}
	m := macs.Get().(hash.Hash)
	m.Write(canon)
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], m.Sum(sum[:0]))
	m.Reset()
	macs.Put(m)
	return string(out[:])
}

// macPool is a pool of HMAC-SHA256s keyed with key.
func macPool(key []byte) *sync.Pool {
	return &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}
}
