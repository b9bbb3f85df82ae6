package load

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"

	"github.com/airlock/airlock/broker/contract"
)

// A floor process that serves something a local stranger should not have
// (the HTTP floor runs the operator's tool on their roots), could take
// from the load (the rtt echo serves one connection) or could grow (the
// relay forwarder buffers what it is sent) admits only requests
// that carry its run's secret in the token header. The secret is made per
// run, reaches the child on its stdin (never argv, which other local
// users can read) and is compared in constant time (RATIONALE.md, "Why
// does a floor process take a secret, on its stdin?").

// NewSecret is a fresh per-run secret.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// SecretHeader is the request header that carries a floor's secret.
func SecretHeader(secret string) http.Header {
	return http.Header{contract.TokenHeader: {secret}}
}

// SecretGuard answers 401 to a request without secret in the token
// header, and closes its connection (a kept one would be a stranger's to
// park until a floor's idle timeout, where it has one); it passes the
// rest to next.
func SecretGuard(secret string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(secret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get(contract.TokenHeader)))
		if secret == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("Connection", "close")
			http.Error(w, "this floor serves only the load run that started it", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
