// Package httpx is the HTTP plumbing every broker route shares: the JSON
// error body and the HTTP status of each contract code, the Host check
// against DNS rebinding, the launch-token check and capped request bodies.
package httpx

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/metrics"
)

// Status is the HTTP status of a contract code: 400 for the codes that
// only ever travel on a socket.
func Status(c contract.Code) int {
	switch c {
	case contract.InvalidCredentials:
		return http.StatusUnauthorized
	case contract.CredentialExpired:
		return http.StatusGone
	case contract.InvalidOrigin:
		return http.StatusForbidden
	case contract.NotFound:
		return http.StatusNotFound
	case contract.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// staticText is the message for each code. Messages never quote request
// content, so an error body can never echo a secret back.
var staticText = map[contract.Code]string{
	contract.InvalidCredentials: "missing or invalid credentials",
	contract.CredentialExpired:  "the session has expired",
	contract.InvalidOrigin:      "origin or host not allowed",
	contract.InvalidMessage:     "the request is not valid",
	contract.NotFound:           "not found",
	contract.Unavailable:        "the broker cannot take this request now",
}

// WriteError writes {"error":{"code":…,"message":…}} with the code's status
// and static text.
func WriteError(w http.ResponseWriter, c contract.Code) {
	writeBody(w, Status(c), ErrorBody(c))
}

// ErrorBody is the JSON error body of c, newline included, as WriteError
// sends it. A response written without net/http (a connection refused at
// the connection cap) uses it too, so every error body has one shape.
func ErrorBody(c contract.Code) []byte {
	msg := staticText[c]
	if msg == "" {
		msg = "refused"
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": string(c), "message": msg}})
	return append(body, '\n')
}

// WriteJSON writes v as the JSON response body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"code":"INTERNAL","message":"internal error"}}`)
	}
	writeBody(w, status, append(body, '\n'))
}

var (
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"}
	noSniff  = []string{"nosniff"}
)

// writeBody writes a JSON body with the headers every response carries.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// Shared values, set without the copy Header.Set makes: net/http
	// only reads them, and an Add or Set elsewhere replaces the slice.
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Refusal records a refused authentication (endpoint, code) for metrics.
type Refusal func(endpoint string, c contract.Code)

// HostGuard refuses, 403 before anything else, a request whose Host is not
// the broker's own loopback authority: 127.0.0.1:PORT, localhost:PORT or
// [::1]:PORT. It defeats DNS rebinding, where a hostile name resolves to
// 127.0.0.1 so a page on it could reach the broker as "same origin".
// Forwarding headers are never consulted. port reports the bound port.
//
// A request over the broker's Unix socket must carry Host: localhost (the
// socket has no port; UnixHost), whether or not the TCP listener is on
// loopback: a browser cannot reach the socket, but the rule stays one.
func HostGuard(port func() int, refused Refusal, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok := OverUnix(r) && r.Host == UnixHost || !OverUnix(r) && LoopbackAuthority(r.Host, port()); !ok {
			refused(endpointOf(r.URL.Path), contract.InvalidOrigin)
			WriteError(w, contract.InvalidOrigin)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// UnixHost is the Host of every request over the broker's Unix socket:
// what HTTP clients send for http://localhost/ with no port.
const UnixHost = "localhost"

// OverUnix reports whether r arrived on a Unix socket.
func OverUnix(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && a.Network() == "unix"
}

// LoopbackAuthority reports whether hostport is one of the loopback names
// with exactly the given port.
func LoopbackAuthority(hostport string, port int) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil || p != strconv.Itoa(port) {
		return false
	}
	switch host {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

// OneOrigin returns the request's Origin when it carries exactly one
// Origin header; ok is false when it carries none or several. Several
// Origins are refused as a mismatch everywhere: which one a check reads
// (the first? any?) must not decide whether a request gets in.
func OneOrigin(r *http.Request) (origin string, ok bool) {
	origins := r.Header.Values("Origin")
	if len(origins) != 1 {
		return "", false
	}
	return origins[0], true
}

// LoopbackOrigin reports whether origin is http://HOST:PORT for a loopback
// name and exactly the given port.
func LoopbackOrigin(origin string, port int) bool {
	rest, ok := strings.CutPrefix(origin, "http://")
	if !ok || strings.ContainsAny(rest, "/?#@") {
		return false
	}
	if strings.HasPrefix(rest, "[::1]:") {
		return rest == "[::1]:"+strconv.Itoa(port)
	}
	return LoopbackAuthority(rest, port)
}

// Token holds the launch token as a digest, so comparisons take the same
// time whatever the presented value's length.
type Token struct {
	digest [sha256.Size]byte
	set    bool
}

// NewToken wraps the launch token; an empty secret leaves the broker inert.
func NewToken(secret string) Token {
	if secret == "" {
		return Token{}
	}
	return Token{digest: sha256.Sum256([]byte(secret)), set: true}
}

// Set reports whether a launch token was configured.
func (t Token) Set() bool { return t.set }

// Matches compares presented with the token in constant time.
func (t Token) Matches(presented string) bool {
	d := sha256.Sum256([]byte(presented))
	return t.set && subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1
}

// TokenGuard answers 404 when no token is configured (inert by default) and
// 401 INVALID_CREDENTIALS when the request does not present it.
func TokenGuard(t Token, refused Refusal, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.Set() {
			WriteError(w, contract.NotFound)
			return
		}
		if !t.Matches(r.Header.Get(contract.TokenHeader)) {
			refused(endpointOf(r.URL.Path), contract.InvalidCredentials)
			WriteError(w, contract.InvalidCredentials)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ReadBody reads at most limit bytes of the request body. A larger body is
// an error without the rest being read into memory.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, ErrBodyTooLarge
		}
		return nil, ErrBodyUnreadable
	}
	return body, nil
}

// Endpoint names a route for metric labels, from a closed set.
func endpointOf(path string) string {
	switch {
	case path == "/local/sessions" || strings.HasPrefix(path, "/local/sessions/"):
		return "sessions"
	case path == "/local/bootstrap":
		return "bootstrap"
	case path == "/local/ws":
		return "ws"
	case path == "/channel" || path == "/local/channel":
		return "channel"
	case strings.HasPrefix(path, "/v1/"):
		return "v1"
	case path == "/mcp":
		return "mcp"
	}
	return metrics.Other
}

// Endpoint is endpointOf, exported for routes that record their own
// refusals.
func Endpoint(path string) string { return endpointOf(path) }
