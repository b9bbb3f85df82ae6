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
	// ViewProtocol is the WebSocket subprotocol a view offers, beside
	// its view key, on /local/ws and /local/channel; the broker selects
	// it, never the key (PROTOCOL section 3).
	ViewProtocol = "airlock.view"
	// ViewKeyProtocolPrefix starts the subprotocol that carries the view
	// key: airlock.view-key.<viewKey>.
	ViewKeyProtocolPrefix = "airlock.view-key."
)

// ViewCookieName is tensorviz_local_browser_<h>, h the first 16 hex
// characters of SHA-256 of the exact launch origin, so loopback windows on
// different ports do not overwrite each other's cookie.
func ViewCookieName(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return ViewCookiePrefix + hex.EncodeToString(sum[:])[:16]
}

// ViewSubprotocols is what a view offers in Sec-WebSocket-Protocol: the
// view protocol and its view key.
func ViewSubprotocols(viewKey string) []string {
	return []string{ViewProtocol, ViewKeyProtocolPrefix + viewKey}
}
