package session

import (
	"net/http"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/executors/wire"
)

// Body caps of mint and bootstrap (PROTOCOL section 1).
const maxBodyBytes = 1 << 20

// decodeBody reads a mint or bootstrap body (capped at maxBodyBytes) and
// decodes it strictly into v: unknown keys, keys duplicated even under case
// folding, trailing data or a wrong type are all errors (PROTOCOL section
// 1). The strict walk is wire's, which the /local bodies share with
// envelopes; httpx only reads the capped bytes.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := httpx.ReadBody(w, r, maxBodyBytes)
	if err != nil {
		return err
	}
	return wire.DecodeStrict(body, v)
}

// TTL bounds of PROTOCOL section 2.
const (
	DefaultTTLSeconds = 8 * 60 * 60
	MinTTLSeconds     = 1
	MaxTTLSeconds     = 24 * 60 * 60
)

// MintRequest is the body of POST /local/sessions. Unknown keys are 400.
type MintRequest struct {
	LaunchOrigin          *string `json:"launchOrigin"`
	TTLSeconds            *int64  `json:"ttlSeconds,omitempty"`
	CanProposeSourceEdits *bool   `json:"canProposeSourceEdits,omitempty"`
}

// Info is the session as clients see it: the bootstrap response, and the
// mint response without the secrets.
type Info struct {
	WorkspaceSessionID string                `json:"workspaceSessionId"`
	LaunchOrigin       string                `json:"launchOrigin"`
	ExpiresAt          string                `json:"expiresAt"`
	ProtocolVersion    int                   `json:"protocolVersion"`
	Capabilities       contract.Capabilities `json:"capabilities"`
}

// MintResponse is the 201 body of POST /local/sessions: the only response
// that ever carries secrets, to the token holder.
type MintResponse struct {
	Info
	ViewCredential string `json:"viewCredential"`
	HostCookieKey  string `json:"hostCookieKey"`
}

func infoOf(s *Session) Info {
	return Info{s.ID, s.Origin, s.ExpiresAt.UTC().Format(time.RFC3339), contract.ProtocolVersion, s.Caps}
}

// ClampTTL applies the default and the [1s, 24h] bound.
func ClampTTL(seconds *int64) time.Duration {
	n := int64(DefaultTTLSeconds)
	if seconds != nil {
		n = min(max(*seconds, MinTTLSeconds), MaxTTLSeconds)
	}
	return time.Duration(n) * time.Second
}

func (s *Service) serveMint(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	var req MintRequest
	if err := decodeBody(w, r, &req); err != nil || req.LaunchOrigin == nil {
		httpx.WriteError(w, contract.InvalidMessage)
		return
	}
	origin, err := NormalizeOrigin(*req.LaunchOrigin)
	if err != nil {
		httpx.WriteError(w, contract.InvalidMessage)
		return
	}
	propose := req.CanProposeSourceEdits != nil && *req.CanProposeSourceEdits
	m, err := s.store.mint(origin, ClampTTL(req.TTLSeconds), propose, s.opts.Local.SourceProposals)
	if err != nil {
		s.log.Warn("mint refused", "reason", "max_sessions")
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	s.m.SessionsMinted.Inc()
	s.opts.Receipts.Event(receipts.KindSessionMinted, m.Session.ID, "")
	s.log.Info("session minted", "session", m.Session.ID, "origin", origin, "expires_at", m.Session.ExpiresAt)
	httpx.WriteJSON(w, http.StatusCreated, MintResponse{infoOf(m.Session), m.ViewCredential, m.HostCookieKey})
}
