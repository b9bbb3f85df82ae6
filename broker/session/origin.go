package session

import "github.com/airlock/airlock/broker/internal/httpx"

// NormalizeOrigin is httpx.CanonicalOrigin for a launch origin: the exact
// string a browser will send as its Origin, or ErrBadOrigin.
func NormalizeOrigin(s string) (string, error) {
	origin, ok := httpx.CanonicalOrigin(s)
	if !ok {
		return "", ErrBadOrigin
	}
	return origin, nil
}
