package session

import (
	"errors"
	"net/http"
	"strings"

	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/relay/contract"
)

// BootstrapRequest is the body of POST /local/bootstrap.
type BootstrapRequest struct {
	WorkspaceSessionID string `json:"workspaceSessionId"`
	ViewCredential     string `json:"viewCredential"`
}

// serveBootstrap trades the one-time view credential for the view cookie.
// The response carries session info only, never a credential.
func (s *Service) serveBootstrap(w http.ResponseWriter, r *http.Request) {
	var req BootstrapRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.refuseHTTP(w, r, contract.InvalidMessage)
		return
	}
	sess, key, err := s.store.bootstrap(req.WorkspaceSessionID, requestOrigin(r), req.ViewCredential)
	if err != nil {
		s.refuseHTTP(w, r, codeOf(err))
		return
	}
	w.Header().Add("Set-Cookie", viewCookie(sess, key))
	httpx.WriteJSON(w, http.StatusOK, infoOf(sess))
}

// viewCookie is the Set-Cookie value of PROTOCOL section 3: session-scoped
// (no Expires or Max-Age), HttpOnly, SameSite=Strict, Path=/local, Secure
// only for an https launch origin.
func viewCookie(s *Session, key string) string {
	c := s.CookieName + "=" + key + "; Path=/local; HttpOnly; SameSite=Strict"
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
