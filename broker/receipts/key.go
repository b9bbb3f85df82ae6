package receipts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

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
