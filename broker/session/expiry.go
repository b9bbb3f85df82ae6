package session

import (
	"time"

	"github.com/airlock/airlock/broker/contract"
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
		hubs, next := s.store.sweep()
		for _, h := range hubs {
			expireHub(h)
		}
		wait := maxReaperWait
		if !next.IsZero() {
			wait = min(max(next.Sub(s.clock.Now()), 0), maxReaperWait)
		}
		t := s.clock.NewTimer(wait)
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
