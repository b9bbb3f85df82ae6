package session

import (
	"net/http"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
)

// maxReaperWait caps the reaper's sleep so a tombstone is deleted within a
// second of its retention ending even if the wall clock jumped.
const maxReaperWait = time.Second

// reaper expires sessions at expiresAt (closing their sockets 4402) and
// deletes tombstones when their retention ends. It sleeps until the next
// deadline, at most a second, and stops when stop closes.
func (s *Service) reaper(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		hubs, next, now := s.store.sweep()
		for _, h := range hubs {
			expireHub(h)
		}
		until := now.Add(maxReaperWait)
		if !next.IsZero() && next.Before(until) {
			until = next
		}
		t := s.clock.TimerAt(until)
		select {
		case <-stop:
			t.Stop()
			return
		case <-s.store.wake:
			t.Stop()
		case <-t.C():
		}
	}
}

// expireHub closes every socket of an expired session with 4402
// CREDENTIAL_EXPIRED.
func expireHub(h interface {
	Close(contract.CloseCode, string)
}) {
	h.Close(contract.CredentialExpired.CloseCode(), string(contract.CredentialExpired))
}

// serveEnd is DELETE /local/sessions/{id} (PROTOCOL section 2.1): the
// token holder ends a session before its expiresAt, as expiry would (its
// sockets closed 4402, then 410 for the retention). Ending one that has
// already ended is 204 again; an id never minted, or already reaped, is
// 404.
func (s *Service) serveEnd(w http.ResponseWriter, r *http.Request) {
	hub, found := s.store.end(r.PathValue("id"))
	if !found {
		httpx.WriteError(w, contract.NotFound)
		return
	}
	if hub != nil {
		expireHub(hub)
		s.store.nudge() // its reap is now the reaper's next deadline
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}
