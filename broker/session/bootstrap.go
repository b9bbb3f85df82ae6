package session

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
)

// BootstrapRequest is the body of POST /local/bootstrap.
type BootstrapRequest struct {
	WorkspaceSessionID string `json:"workspaceSessionId"`
	ViewCredential     string `json:"viewCredential"`
}

// BootstrapResponse is the 200 body of POST /local/bootstrap: the
// session's public facts and the view key, which the page keeps in
// sessionStorage and offers beside the cookie (PROTOCOL section 3).
type BootstrapResponse struct {
	Info
	ViewKey string `json:"viewKey"`
}

// serveBootstrap trades the one-time view credential for the view cookie
// and the view key. Neither is the fragment credential, which works once.
func (s *Service) serveBootstrap(w http.ResponseWriter, r *http.Request) {
	var req BootstrapRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.refuseHTTP(w, r, contract.InvalidMessage)
		return
	}
	sess, pass, err := s.store.bootstrap(req.WorkspaceSessionID, requestOrigin(r), req.ViewCredential)
	if err != nil {
		s.refuseHTTP(w, r, codeOf(err))
		return
	}
	w.Header().Add("Set-Cookie", viewCookie(sess, pass.cookie, s.clock.Now()))
	httpx.WriteJSON(w, http.StatusOK, BootstrapResponse{infoOf(sess), pass.key})
}

// viewCookie is the Set-Cookie value of PROTOCOL section 3: HttpOnly,
// SameSite=Strict, Path=/local, Secure only for an https launch origin,
// and a Max-Age that ends it with the session (the whole seconds left,
// at least 1), so the browser drops it when the broker stops taking it.
func viewCookie(s *Session, key string, now time.Time) string {
	maxAge := max(1, int64(s.ExpiresAt.Sub(now)/time.Second))
	c := s.CookieName + "=" + key + "; Path=/local; Max-Age=" + strconv.FormatInt(maxAge, 10) + "; HttpOnly; SameSite=Strict"
	if strings.HasPrefix(s.Origin, "https://") {
		c += "; Secure"
	}
	return c
}

func (s *Service) refuseHTTP(w http.ResponseWriter, r *http.Request, c contract.Code) {
	if c != contract.InvalidMessage {
		s.authRefused(httpx.Endpoint(r.URL.Path), c)
	}
	httpx.WriteError(w, c)
}

// codeOf maps a session error onto its contract code.
func codeOf(err error) contract.Code {
	switch {
	case errors.Is(err, ErrOriginMismatch):
		return contract.InvalidOrigin
	case errors.Is(err, ErrExpired):
		return contract.CredentialExpired
	case errors.Is(err, ErrBadOrigin):
		return contract.InvalidMessage
	case errors.Is(err, ErrTooManySessions), errors.Is(err, ErrDraining):
		return contract.Unavailable
	}
	return contract.InvalidCredentials
}
