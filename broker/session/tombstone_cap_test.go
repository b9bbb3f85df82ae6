package session

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/metrics"
)

// A token holder minting short sessions in a loop must not grow the
// tombstones without bound: past local.max_tombstones the oldest is
// deleted early (it then answers as unknown, 401, instead of 410).
func TestTombstoneCap(t *testing.T) {
	clock := newFakeClock()
	reg := metrics.New()
	st := newStore(clock, time.Hour, storeLimits{live: 10, tombstones: 2}, relayOptionsForTest(), reg)
	var ids []string
	var hosts [][]*http.Cookie
	expireOne := func() {
		t.Helper()
		m, err := st.mint(origin, time.Second, false, true)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.Session.ID)
		hosts = append(hosts, []*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}})
		clock.now = clock.now.Add(time.Second)
		if _, _, err := st.authenticate(hosts[len(hosts)-1], origin, false); !errors.Is(err, ErrExpired) {
			t.Fatalf("session %d at expiresAt: %v", len(ids), err)
		}
	}
	expireOne()
	expireOne()
	// Exactly at the cap: both tombstones answer 410.
	if l, ts := st.counts(); l != 0 || ts != 2 {
		t.Fatalf("%d live %d tombstones, want 0 and 2", l, ts)
	}
	for i := range 2 {
		if _, _, err := st.bootstrap(ids[i], origin, "wrong"); !errors.Is(err, ErrExpired) {
			t.Fatalf("tombstone %d at the cap: %v", i, err)
		}
	}
	expireOne()
	if l, ts := st.counts(); l != 0 || ts != 2 {
		t.Fatalf("past the cap: %d live %d tombstones, want 0 and 2", l, ts)
	}
	if _, _, err := st.bootstrap(ids[0], origin, "wrong"); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("the oldest tombstone was not deleted early: %v", err)
	}
	if _, _, err := st.authenticate(hosts[0], origin, false); !errors.Is(err, ErrNoRole) {
		t.Fatalf("the oldest tombstone's cookie: %v", err)
	}
	for i := 1; i < 3; i++ {
		if _, _, err := st.bootstrap(ids[i], origin, "wrong"); !errors.Is(err, ErrExpired) {
			t.Fatalf("tombstone %d: %v", i, err)
		}
	}
	if got := testutil.ToFloat64(reg.Sessions.WithLabelValues("tombstone")); got != 2 {
		t.Fatalf("tombstone gauge %v", got)
	}
	if len(st.byID) != 2 || len(st.byKey) != 2 {
		t.Fatalf("evicted tombstone left state: %d sessions %d keys", len(st.byID), len(st.byKey))
	}
	// The reaper deletes the survivors at their retention as before.
	clock.now = clock.now.Add(time.Hour)
	if _, next, _ := st.sweep(); !next.IsZero() {
		t.Fatalf("next deadline %v after every tombstone's retention", next)
	}
	if l, ts := st.counts(); l != 0 || ts != 0 {
		t.Fatalf("%d live %d tombstones after retention", l, ts)
	}
}
