package session

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/testkit"
)

func i64(n int64) *int64 { return &n }

func TestClampTTL(t *testing.T) {
	cases := []struct {
		in   *int64
		want time.Duration
	}{
		{nil, 8 * time.Hour}, {i64(0), time.Second}, {i64(-5), time.Second}, {i64(1), time.Second},
		{i64(100), 100 * time.Second}, {i64(86400), 24 * time.Hour}, {i64(86401), 24 * time.Hour},
		{i64(1 << 62), 24 * time.Hour},
	}
	for _, c := range cases {
		if got := ClampTTL(c.in); got != c.want {
			t.Errorf("ClampTTL(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestExpiryRoundsUpToASecond(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 300_000_000, time.UTC)
	if got := expiry(now, time.Second); !got.Equal(time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC)) {
		t.Fatalf("expiry %v", got)
	}
	exact := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := expiry(exact, time.Hour); !got.Equal(exact.Add(time.Hour)) {
		t.Fatalf("expiry %v", got)
	}
}

func newTestService(t *testing.T, clock Clock, mutate func(*Options)) *Service {
	t.Helper()
	o := Options{Local: testLocal(), Clock: clock}
	if mutate != nil {
		mutate(&o)
	}
	s := New(o)
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	return s
}

const origin = "http://127.0.0.1:5173"

func TestBootstrapRefusalOrder(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, nil)
	m, err := s.store.mint(origin, time.Minute, false, true)
	if err != nil {
		t.Fatal(err)
	}
	id, cred := m.Session.ID, m.ViewCredential
	check := func(name, id, origin, cred string, want error) {
		t.Helper()
		if _, _, err := s.store.bootstrap(id, origin, cred); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	check("unknown session beats everything", "ws_nope", "http://evil", "x", ErrUnknownSession)
	check("origin before credential", id, "http://evil.example", "wrong", ErrOriginMismatch)
	check("wrong credential", id, origin, "wrong", ErrBadCredential)
	check("host key is not a view credential", id, origin, m.HostCookieKey, ErrBadCredential)
	check("missing origin", id, "", cred, ErrOriginMismatch)
	if _, pass, err := s.store.bootstrap(id, origin, cred); err != nil || pass.cookie == "" || pass.key == "" ||
		pass.cookie == cred || pass.key == cred || pass.key == pass.cookie {
		t.Fatalf("bootstrap after failures: cookie set %v key set %v err %v (a failed bootstrap must not use the credential up)",
			pass.cookie != "", pass.key != "", err)
	}
	check("credential works once", id, origin, cred, ErrBadCredential)

	clock.Advance(time.Minute)
	check("expired, right origin", id, origin, cred, ErrExpired)
	check("expired, origin still first", id, "http://evil.example", cred, ErrOriginMismatch)
	check("expired beats a wrong credential", id, origin, "wrong", ErrExpired)
}

func TestExpiryTombstoneAndReaper(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, nil)
	m, _ := s.store.mint(origin, 10*time.Second, false, true)
	_, pass, err := s.store.bootstrap(m.Session.ID, origin, m.ViewCredential)
	if err != nil {
		t.Fatal(err)
	}
	hostC := []*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}}
	viewC := []*http.Cookie{{Name: m.Session.CookieName, Value: pass.cookie}}
	if _, role, err := s.store.authenticate(hostC, origin, false); err != nil || role != contract.Host {
		t.Fatalf("host before expiry: %v %v", role, err)
	}
	clock.Advance(9 * time.Second)
	if live, _ := s.store.counts(); live != 1 {
		t.Fatalf("expired early: live %d", live)
	}
	clock.Advance(time.Second)
	testkit.Eventually(t, "the reaper tombstones the session", func() bool { l, ts := s.store.counts(); return l == 0 && ts == 1 })
	for name, c := range map[string][]*http.Cookie{"host": hostC, "view": viewC} {
		if _, _, err := s.store.authenticate(c, origin, false); !errors.Is(err, ErrExpired) {
			t.Errorf("%s cookie on a tombstone: %v, want ErrExpired", name, err)
		}
	}
	if s.ViewCookieValid(withViewKey(requestWith(viewC), pass.key)) {
		t.Error("ViewCookieValid true for a tombstone")
	}
	if s.store.viewKeyMatches(m.Session, pass.key) {
		t.Error("the view key of a tombstone still matches")
	}
	if _, _, err := s.store.bootstrap(m.Session.ID, origin, m.ViewCredential); !errors.Is(err, ErrExpired) {
		t.Errorf("bootstrap on a tombstone: %v", err)
	}

	clock.Advance(3599 * time.Second)
	if _, ts := s.store.counts(); ts != 1 {
		t.Fatal("tombstone reaped before its retention ended")
	}
	clock.Advance(time.Second)
	testkit.Eventually(t, "the reaper deletes the tombstone", func() bool { _, ts := s.store.counts(); return ts == 0 })
	if _, _, err := s.store.bootstrap(m.Session.ID, origin, m.ViewCredential); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("bootstrap after reaping: %v", err)
	}
	if _, _, err := s.store.authenticate(hostC, origin, false); !errors.Is(err, ErrNoRole) {
		t.Errorf("host cookie after reaping: %v", err)
	}
	if len(s.store.byKey) != 0 || len(s.store.byID) != 0 {
		t.Errorf("reaped session left keys behind: %d keys, %d sessions", len(s.store.byKey), len(s.store.byID))
	}
}

// TestExpiryIsExactWithoutTheReaper: a credential stops working at
// expiresAt even if the reaper has not run (a laptop waking from sleep).
func TestExpiryIsExactWithoutTheReaper(t *testing.T) {
	clock := newFakeClock()
	st := newStore(clock, time.Hour, storeLimits{live: 10, tombstones: 10}, relayOptionsForTest(), nil)
	m, _ := st.mint(origin, time.Second, false, true)
	clock.now = clock.now.Add(time.Second) // no timers fire
	if _, _, err := st.authenticate([]*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}}, origin, false); !errors.Is(err, ErrExpired) {
		t.Fatalf("host at expiresAt: %v", err)
	}
	if l, ts := st.counts(); l != 0 || ts != 1 {
		t.Fatalf("lazy expiry did not tombstone: %d live %d tombstones", l, ts)
	}
}

func TestMaxSessions(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, func(o *Options) { o.Local.MaxSessions = 2 })
	for i := range 2 {
		if _, err := s.store.mint(origin, time.Second, false, true); err != nil {
			t.Fatalf("mint %d: %v", i, err)
		}
	}
	if _, err := s.store.mint(origin, time.Hour, false, true); !errors.Is(err, ErrTooManySessions) {
		t.Fatalf("third mint: %v", err)
	}
	clock.Advance(time.Second)
	testkit.Eventually(t, "expiry frees live slots", func() bool { l, _ := s.store.counts(); return l == 0 })
	if _, err := s.store.mint(origin, time.Hour, false, true); err != nil {
		t.Fatalf("mint after expiry: %v (tombstones must not count as live)", err)
	}
}

func TestAuthenticateCookies(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, nil)
	a, _ := s.store.mint(origin, time.Hour, false, true)
	const otherOrigin = "http://127.0.0.1:6006"
	b, _ := s.store.mint(otherOrigin, time.Hour, false, true)
	_, passA, _ := s.store.bootstrap(a.Session.ID, origin, a.ViewCredential)
	_, passB, _ := s.store.bootstrap(b.Session.ID, otherOrigin, b.ViewCredential)
	keyA := passA.cookie
	viewA := &http.Cookie{Name: a.Session.CookieName, Value: keyA}
	viewB := &http.Cookie{Name: b.Session.CookieName, Value: passB.cookie}

	cases := []struct {
		name    string
		cookies []*http.Cookie
		origin  string
		want    error
		session *Session
		role    contract.Role
	}{
		{"host", []*http.Cookie{{Name: contract.HostCookie, Value: a.HostCookieKey}}, origin, nil, a.Session, contract.Host},
		{"no cookie", nil, origin, ErrNoRole, nil, 0},
		{"view key as host", []*http.Cookie{{Name: contract.HostCookie, Value: keyA}}, origin, ErrNoRole, nil, 0},
		{"host key as view", []*http.Cookie{{Name: a.Session.CookieName, Value: a.HostCookieKey}}, origin, ErrNoRole, nil, 0},
		{"credential as cookie", []*http.Cookie{{Name: a.Session.CookieName, Value: a.ViewCredential}}, origin, ErrNoRole, nil, 0},
		{"view key under another origin's name", []*http.Cookie{{Name: b.Session.CookieName, Value: keyA}}, origin, ErrNoRole, nil, 0},
		{"view", []*http.Cookie{viewA}, origin, nil, a.Session, contract.View},
		{"both views, origin picks", []*http.Cookie{viewB, viewA}, origin, nil, a.Session, contract.View},
		{"both views, other origin picks", []*http.Cookie{viewA, viewB}, otherOrigin, nil, b.Session, contract.View},
		{"valid cookie, wrong origin", []*http.Cookie{viewA}, "http://127.0.0.1:9999", ErrOriginMismatch, nil, 0},
		{"planted host cookie does not hide the view", []*http.Cookie{{Name: contract.HostCookie, Value: "junk"}, viewA}, origin, nil, a.Session, contract.View},
		{"host, wrong origin", []*http.Cookie{{Name: contract.HostCookie, Value: a.HostCookieKey}}, otherOrigin, ErrOriginMismatch, nil, 0},
		{"host, no origin", []*http.Cookie{{Name: contract.HostCookie, Value: a.HostCookieKey}}, "", ErrOriginMismatch, nil, 0},
	}
	for _, c := range cases {
		sess, role, err := s.store.authenticate(c.cookies, c.origin, false)
		if !errors.Is(err, c.want) || sess != c.session || role != c.role {
			t.Errorf("%s: session ok %v role %v err %v; want err %v", c.name, sess == c.session, role, err, c.want)
		}
	}
}

func requestWith(cookies []*http.Cookie) *http.Request {
	return requestFrom(origin, cookies)
}

// requestFrom is a /local/channel request with Origin o (none when empty).
func requestFrom(o string, cookies []*http.Cookie) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/local/channel", nil)
	if o != "" {
		r.Header.Set("Origin", o)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	return r
}

// withViewKey offers key as a view does, in Sec-WebSocket-Protocol.
func withViewKey(r *http.Request, key string) *http.Request {
	r.Header.Set("Sec-WebSocket-Protocol", strings.Join(contract.ViewSubprotocols(key), ", "))
	return r
}

func TestViewCookieValid(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, nil)
	a, _ := s.store.mint(origin, time.Hour, false, true)
	_, pass, _ := s.store.bootstrap(a.Session.ID, origin, a.ViewCredential)
	key := pass.cookie
	if !s.ViewCookieValid(withViewKey(requestWith([]*http.Cookie{{Name: a.Session.CookieName, Value: key}}), pass.key)) {
		t.Error("live view cookie not valid")
	}
	for name, c := range map[string]*http.Cookie{
		"wrong value": {Name: a.Session.CookieName, Value: key + "x"},
		"host cookie": {Name: contract.HostCookie, Value: a.HostCookieKey},
		"wrong name":  {Name: contract.ViewCookieName("http://other"), Value: key},
	} {
		if s.ViewCookieValid(withViewKey(requestWith([]*http.Cookie{c}), pass.key)) {
			t.Errorf("%s: valid", name)
		}
	}
}

// TestViewCookieNeedsItsViewKey: the view cookie opens nothing, on
// /local/ws or as a page, without the view key bootstrap returned with
// it: not with none, another session's, the cookie key itself, two keys
// at once or a key in another subprotocol spelling. With local.view_key
// off the cookie alone opens the view (as the seed), and an offered key
// must still be right.
func TestViewCookieNeedsItsViewKey(t *testing.T) {
	for _, required := range []bool{true, false} {
		s := newTestService(t, newFakeClock(), func(o *Options) { o.Local.ViewKey = required })
		a, _ := s.store.mint(origin, time.Hour, false, true)
		b, _ := s.store.mint(origin, time.Hour, false, true)
		_, passA, _ := s.store.bootstrap(a.Session.ID, origin, a.ViewCredential)
		_, passB, _ := s.store.bootstrap(b.Session.ID, origin, b.ViewCredential)
		ck := []*http.Cookie{{Name: a.Session.CookieName, Value: passA.cookie}}
		req := func(protocols ...string) *http.Request {
			r := requestWith(ck)
			for _, p := range protocols {
				r.Header.Add("Sec-WebSocket-Protocol", p)
			}
			return r
		}
		wsGET := func(r *http.Request) error { _, _, err := s.admit(r, origin, false); return err }
		cases := []struct {
			name string
			r    *http.Request
			ok   bool
		}{
			{"its own key", req(contract.ViewProtocol + ", " + contract.ViewKeyProtocolPrefix + passA.key), true},
			{"its own key, headers split", req(contract.ViewProtocol, contract.ViewKeyProtocolPrefix+passA.key), true},
			{"no key", req(), !required},
			{"the view protocol alone", req(contract.ViewProtocol), !required},
			{"another session's key", req(contract.ViewKeyProtocolPrefix + passB.key), false},
			{"the cookie key as the view key", req(contract.ViewKeyProtocolPrefix + passA.cookie), false},
			{"an empty key", req(contract.ViewKeyProtocolPrefix), false},
			{"two keys", req(contract.ViewKeyProtocolPrefix+passA.key, contract.ViewKeyProtocolPrefix+passB.key), false},
			{"the key under another name", req("airlock.view-key-" + passA.key), !required},
		}
		for _, c := range cases {
			if err := wsGET(c.r); (err == nil) != c.ok || (err != nil && codeOf(err) != contract.InvalidCredentials) {
				t.Errorf("required %v, %s: /local/ws %v, want ok %v (or INVALID_CREDENTIALS)", required, c.name, err, c.ok)
			}
			if got := s.ViewCookieValid(c.r); got != c.ok {
				t.Errorf("required %v, %s: page %v, want %v", required, c.name, got, c.ok)
			}
		}
	}
}

// TestViewCookieMaxAge: the cookie ends with its session: Max-Age is the
// whole seconds left to expiresAt, never 0.
func TestViewCookieMaxAge(t *testing.T) {
	exp := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	sess := &Session{CookieName: "c", Origin: origin, ExpiresAt: exp}
	for left, want := range map[time.Duration]string{
		8*time.Hour + 999*time.Millisecond: "Max-Age=28800;", 1500 * time.Millisecond: "Max-Age=1;", time.Nanosecond: "Max-Age=1;", 2 * time.Second: "Max-Age=2;",
	} {
		if got := viewCookie(sess, "k", exp.Add(-left)); !strings.Contains(got, "; "+want) {
			t.Errorf("%v before expiry: %s, want %s", left, got, want)
		}
	}
}

// TestViewCookieValidOnlyForItsOrigin: a live view cookie opens the
// executor channel only for a connection whose Origin is its session's
// launch origin; another session's cookie (even for another loopback
// origin of the same broker) or no Origin is refused.
func TestViewCookieValidOnlyForItsOrigin(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, nil)
	const other = "http://localhost:5173"
	a, _ := s.store.mint(other, time.Hour, false, true)
	_, pass, _ := s.store.bootstrap(a.Session.ID, other, a.ViewCredential)
	ck := []*http.Cookie{{Name: a.Session.CookieName, Value: pass.cookie}}
	if !s.ViewCookieValid(withViewKey(requestFrom(other, ck), pass.key)) {
		t.Fatal("the cookie is not valid for its own origin")
	}
	for _, o := range []string{origin, "", other + "/", "http://LOCALHOST:5173"} {
		if s.ViewCookieValid(withViewKey(requestFrom(o, ck), pass.key)) {
			t.Errorf("valid for Origin %q", o)
		}
	}
	// With the cookies of two sessions, the one for the Origin is found.
	b, _ := s.store.mint(origin, time.Hour, false, true)
	_, passB, _ := s.store.bootstrap(b.Session.ID, origin, b.ViewCredential)
	both := append(ck, &http.Cookie{Name: b.Session.CookieName, Value: passB.cookie})
	if !s.ViewCookieValid(withViewKey(requestFrom(origin, both), passB.key)) || !s.ViewCookieValid(withViewKey(requestFrom(other, both), pass.key)) {
		t.Error("the matching cookie among several was not found")
	}
}

func TestSessionGauges(t *testing.T) {
	clock := newFakeClock()
	s := newTestService(t, clock, func(o *Options) { o.Metrics = newRegistry() })
	_, _ = s.store.mint(origin, time.Second, false, true)
	_, _ = s.store.mint(origin, time.Hour, false, true)
	if v := testutil.ToFloat64(s.m.Sessions.WithLabelValues("live")); v != 2 {
		t.Fatalf("live gauge %v", v)
	}
	clock.Advance(time.Second)
	testkit.Eventually(t, "gauges follow expiry", func() bool {
		return testutil.ToFloat64(s.m.Sessions.WithLabelValues("live")) == 1 &&
			testutil.ToFloat64(s.m.Sessions.WithLabelValues("tombstone")) == 1
	})
}

// advancingClock is a fake clock that, once armed, moves on by step just
// before it arms the next timer: the moment a test's Advance lands between
// the reaper's sweep and its sleep.
type advancingClock struct {
	*fakeClock
	step atomic.Int64 // nanoseconds; 0 when not armed
}

func (c *advancingClock) TimerAt(at time.Time) Timer {
	if d := c.step.Swap(0); d != 0 {
		c.fakeClock.Advance(time.Duration(d))
	}
	return c.fakeClock.TimerAt(at)
}

// TestReaperSleepsUntilADeadline: time that passes between the reaper's
// sweep and its sleep does not push the next sweep later. A sleep armed
// for a duration from the sweep's now would wake a second past the
// session's expiry, here never, since the clock does not move again.
func TestReaperSleepsUntilADeadline(t *testing.T) {
	clock := &advancingClock{fakeClock: newFakeClock()}
	s := newTestService(t, clock, func(o *Options) { o.Metrics = newRegistry() })
	testkit.Eventually(t, "the reaper's first sleep", func() bool { return clock.armed() > 0 })
	clock.step.Store(int64(time.Second))
	_, _ = s.store.mint(origin, time.Second, false, true) // its nudge makes the reaper sweep and sleep again
	testkit.Eventually(t, "the session expires at its deadline", func() bool {
		return testutil.ToFloat64(s.m.Sessions.WithLabelValues("tombstone")) == 1
	})
}
