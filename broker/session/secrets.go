package session

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// secretBytes is the size of every secret: 256 bits.
const secretBytes = 32

// digest is the SHA-256 of a secret. Only digests are stored: a memory
// dump or a debug print of the store reveals no usable credential.
type digest [sha256.Size]byte

// newSecret returns a 256-bit random secret, URL-safe base64 without
// padding, and its digest.
func newSecret() (string, digest) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic("session: crypto/rand failed: " + err.Error()) // rand.Read never fails on supported platforms
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	return s, sha256.Sum256([]byte(s))
}

// newSessionID is a 128-bit random workspace session id. It is an
// identifier, not a credential: it appears in URLs and envelopes.
func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "ws_" + base64.RawURLEncoding.EncodeToString(b)
}

func digestOf(presented string) digest { return sha256.Sum256([]byte(presented)) }

// equal compares digests in constant time.
func (d digest) equal(o digest) bool { return subtle.ConstantTimeCompare(d[:], o[:]) == 1 }
