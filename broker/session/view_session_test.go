package session

import (
	"net/http"
	"testing"
	"time"
)

// TestViewSessionEndsAtExpiry: the channel ViewSession hands the page
// executor is open while the session lives and closes when the reaper
// expires it, so a page admitted on the cookie goes with its session.
func TestViewSessionEndsAtExpiry(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, nil)
	m, _ := s.store.mint(origin, 10*time.Second, false, true)
	_, pass, err := s.store.bootstrap(m.Session.ID, origin, m.ViewCredential)
	if err != nil {
		t.Fatal(err)
	}
	viewC := []*http.Cookie{{Name: m.Session.CookieName, Value: pass.cookie}}
	ended, ok := s.ViewSession(withViewKey(requestWith(viewC), pass.key))
	if !ok || ended == nil {
		t.Fatalf("live view cookie: %v %v", ended, ok)
	}
	clock.Advance(9 * time.Second)
	// The cookie is checked again at 9s (which would expire a due
	// session there and then): still live, and its end not signalled.
	if _, ok := s.ViewSession(withViewKey(requestWith(viewC), pass.key)); !ok {
		t.Fatal("expired early")
	}
	select {
	case <-ended:
		t.Fatal("ended before expiresAt")
	default:
	}
	clock.Advance(time.Second)
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the session's end was not signalled at expiresAt")
	}
	if _, ok := s.ViewSession(withViewKey(requestWith(viewC), pass.key)); ok {
		t.Error("ViewSession true for a tombstone")
	}
}
