package contract

import (
	"crypto/sha256"
	"encoding/hex"
)

// Names a broker and its clients must spell alike (PROTOCOL sections 1
// and 3): the launch token's header and the cookies. The seeds gave them,
// so clients written for those systems work unchanged.
const (
	// TokenHeader carries the launch token.
	TokenHeader = "X-Tensorviz-Token"
	// HostCookie is the fixed cookie name the host sends itself.
	HostCookie = "tensorviz_local_browser"
	// ViewCookiePrefix starts every view cookie name.
	ViewCookiePrefix = HostCookie + "_"
)

// ViewCookieName is tensorviz_local_browser_<h>, h the first 16 hex
// characters of SHA-256 of the exact launch origin, so loopback windows on
// different ports do not overwrite each other's cookie.
func ViewCookieName(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return ViewCookiePrefix + hex.EncodeToString(sum[:])[:16]
}
