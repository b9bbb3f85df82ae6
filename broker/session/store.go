package session

import (
	"container/list"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/broker/relay"
	"github.com/airlock/airlock/metrics"
)

// Session is one workspace session. Its exported fields never change after
// mint; the credential state is guarded by the store's mutex.
type Session struct {
	ID         string
	Origin     string
	CookieName string
	ExpiresAt  time.Time
	// Caps are fixed and read-only (PROTOCOL section 2); only
	// CanProposeSourceEdits varies: asked for at mint and allowed by
	// local.source_proposals. It is what the session really has: mint,
	// bootstrap and connected state it, and the relay holds sourceEdit*
	// to it.
	Caps contract.Capabilities
	hub  *relay.Hub

	cred       digest // the one-time view credential
	credUsed   bool
	viewCookie digest // the view cookie key, set at the one successful bootstrap
	viewKey    digest // the view key bootstrap returned with it
	hasView    bool
	hostKey    digest
	tombstone  bool
	reapAt     time.Time
	tombEl     *list.Element // its place among the tombstones, oldest first
	ended      chan struct{} // closed when the session expires (expireDue)
}

// Hub is the session's relay hub.
func (s *Session) Hub() *relay.Hub { return s.hub }

// keyRef says which role a cookie key opens.
type keyRef struct {
	s    *Session
	role contract.Role
}

// store holds every session and tombstone. One mutex guards it; it never
// calls into a hub while holding it.
type store struct {
	clock     Clock
	retention time.Duration
	limits    storeLimits
	hubOpts   relay.Options
	m         *metrics.Registry
	receipts  *receipts.Log // a session ended (expired or DELETE), by id; nil for none

	mu         sync.Mutex
	byID       map[string]*Session
	byKey      map[digest]keyRef // cookie-key digest -> session and role
	live       int
	tombstones int
	tombs      *list.List    // tombstones in the order they expired, oldest first
	wake       chan struct{} // nudges the reaper when an earlier deadline appears
}

// storeLimits bound what the store holds: live sessions
// (local.max_sessions; minting past it is refused) and tombstones
// (local.max_tombstones; past it the oldest is deleted early, so a token
// holder minting short sessions in a loop cannot grow them without bound).
type storeLimits struct {
	live, tombstones int
}

func newStore(c Clock, retention time.Duration, limits storeLimits, hubOpts relay.Options, m *metrics.Registry) *store {
	st := &store{clock: c, retention: retention, limits: limits, hubOpts: hubOpts, m: metrics.OrNew(m),
		byID: map[string]*Session{}, byKey: map[digest]keyRef{}, tombs: list.New(), wake: make(chan struct{}, 1)}
	st.gauge()
	return st
}

// minted is what mint hands back once: the session and its two secrets.
type minted struct {
	Session        *Session
	ViewCredential string
	HostCookieKey  string
}

// mint creates a live session. Only digests of its secrets are kept. It
// can propose source edits when propose (asked for) and allowProposals
// (local.source_proposals).
func (st *store) mint(origin string, ttl time.Duration, propose, allowProposals bool) (minted, error) {
	cred, credD := newSecret()
	host, hostD := newSecret()
	s := &Session{ID: newSessionID(), Origin: origin, CookieName: contract.ViewCookieName(origin),
		ExpiresAt: expiry(st.clock.Now(), ttl), cred: credD, hostKey: hostD, ended: make(chan struct{}),
		Caps: contract.Capabilities{ReadOnly: true, CanNavigateSource: true, CanProposeSourceEdits: propose && allowProposals}}
	o := st.hubOpts
	o.SessionID, o.Capabilities = s.ID, s.Caps
	s.hub = relay.New(o)

	st.mu.Lock()
	defer st.mu.Unlock()
	if st.live >= st.limits.live {
		return minted{}, ErrTooManySessions
	}
	st.byID[s.ID] = s
	st.byKey[hostD] = keyRef{s, contract.Host}
	st.live++
	st.gauge()
	st.nudge()
	return minted{s, cred, host}, nil
}

// expiry is now+ttl rounded up to a whole second, so the expiresAt the
// client reads is exactly when the session ends.
func expiry(now time.Time, ttl time.Duration) time.Time {
	t := now.Add(ttl)
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// viewPass is what one bootstrap hands out: the view cookie key (for the
// HttpOnly cookie) and the view key (for the page's sessionStorage).
type viewPass struct {
	cookie, key string
}

// bootstrap trades the one-time view credential for the view cookie key
// and the view key, minted together. Refusal order (PROTOCOL section 3):
// session, origin, expiry, credential. A failed bootstrap does not use
// the credential up.
func (st *store) bootstrap(id, origin, cred string) (*Session, viewPass, error) {
	presented := digestOf(cred)
	st.mu.Lock()
	s := st.byID[id]
	switch {
	case s == nil:
		st.mu.Unlock()
		return nil, viewPass{}, ErrUnknownSession
	case origin != s.Origin:
		st.mu.Unlock()
		return nil, viewPass{}, ErrOriginMismatch
	case st.expireDue(s):
		st.mu.Unlock()
		expireHub(s.hub)
		return nil, viewPass{}, ErrExpired
	case s.tombstone:
		st.mu.Unlock()
		return nil, viewPass{}, ErrExpired
	case !presented.equal(s.cred) || s.credUsed:
		st.mu.Unlock()
		return nil, viewPass{}, ErrBadCredential
	}
	defer st.mu.Unlock()
	cookie, cookieD := newSecret()
	key, keyD := newSecret()
	s.credUsed, s.viewCookie, s.viewKey, s.hasView = true, cookieD, keyD, true
	st.byKey[cookieD] = keyRef{s, contract.View}
	return s, viewPass{cookie, key}, nil
}

// viewKeyMatches compares a presented view key with the one bootstrap
// returned for s, in constant time. A session that is a tombstone (its
// credentials revoked) or never bootstrapped matches nothing.
func (st *store) viewKeyMatches(s *Session, key string) bool {
	presented := digestOf(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	return s.hasView && !s.tombstone && presented.equal(s.viewKey)
}

// authenticate finds the session role a socket's cookies open, in the
// order of PROTOCOL section 4.1: a cookie naming a live role (ErrNoRole), the Origin
// (ErrOriginMismatch), expiry (ErrExpired).
//
// A valid host cookie makes the socket a host. Otherwise every
// tensorviz_local_browser_<h> cookie is tried (the browser sends the
// cookies of every loopback port): one whose session's launch origin is
// the socket's Origin wins; any other valid one leads to ErrOriginMismatch.
// An invalid host cookie does not hide valid view cookies, so a page on
// another loopback port cannot lock views out by planting one.
func (st *store) authenticate(cookies []*http.Cookie, origin string, viewOnly bool) (*Session, contract.Role, error) {
	st.mu.Lock()
	s, role := st.lookup(cookies, origin, viewOnly)
	switch {
	case s == nil:
		st.mu.Unlock()
		return nil, 0, ErrNoRole
	case !viewOnly && origin != s.Origin:
		st.mu.Unlock()
		return nil, 0, ErrOriginMismatch
	case st.expireDue(s):
		st.mu.Unlock()
		expireHub(s.hub)
		return nil, 0, ErrExpired
	case s.tombstone:
		st.mu.Unlock()
		return nil, 0, ErrExpired
	}
	st.mu.Unlock()
	return s, role, nil
}

func (st *store) lookup(cookies []*http.Cookie, origin string, viewOnly bool) (*Session, contract.Role) {
	var other *Session
	for _, c := range cookies {
		if c.Name == contract.HostCookie && !viewOnly {
			if ref, ok := st.find(c.Value, contract.Host); ok {
				return ref, contract.Host
			}
			continue
		}
		if !strings.HasPrefix(c.Name, contract.ViewCookiePrefix) {
			continue
		}
		s, ok := st.find(c.Value, contract.View)
		switch {
		case !ok || s.CookieName != c.Name:
		case s.Origin == origin:
			return s, contract.View
		case other == nil:
			other = s
		}
	}
	if other != nil {
		return other, contract.View
	}
	return nil, 0
}

// find looks a cookie key up by digest, then compares the stored digest in
// constant time. The map lookup reveals nothing about the key: it is keyed
// by a hash of it.
func (st *store) find(value string, role contract.Role) (*Session, bool) {
	d := digestOf(value)
	ref, ok := st.byKey[d]
	if !ok || ref.role != role {
		return nil, false
	}
	want := ref.s.hostKey
	if role == contract.View {
		want = ref.s.viewCookie
	}
	return ref.s, d.equal(want)
}

// expireDue turns a session whose expiresAt has passed into a tombstone
// and reports whether it did; the caller closes the hub after unlocking.
func (st *store) expireDue(s *Session) bool {
	if s.tombstone || st.clock.Now().Before(s.ExpiresAt) {
		return false
	}
	st.entomb(s, s.ExpiresAt)
	return true
}

// end turns the session id into a tombstone now, as if it had expired
// (DELETE /local/sessions/{id}), and returns its hub for the caller to
// close after unlocking: nil when it had already ended. found is false
// for an id the store does not hold (never minted, or reaped).
func (st *store) end(id string) (hub *relay.Hub, found bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.byID[id]
	if !ok {
		return nil, false
	}
	if s.tombstone {
		return nil, true
	}
	st.entomb(s, st.clock.Now())
	return s.hub, true
}

// entomb makes a live session a tombstone that ended at at and is kept
// for the retention after it.
func (st *store) entomb(s *Session, at time.Time) {
	s.tombstone, s.credUsed = true, true
	close(s.ended) // once: a tombstone never becomes live again
	s.reapAt = at.Add(st.retention)
	s.tombEl = st.tombs.PushBack(s)
	st.live--
	st.tombstones++
	st.receipts.Event(receipts.KindSessionExpired, s.ID, "")
	st.evictTombstones()
	st.gauge()
}

// evictTombstones deletes the oldest tombstones past local.max_tombstones
// before their retention ends: they then answer as unknown (401) rather
// than expired (410), which is the only thing the early deletion costs.
func (st *store) evictTombstones() {
	for st.tombstones > st.limits.tombstones {
		old := st.tombs.Front().Value.(*Session)
		st.reap(old.ID, old)
	}
}

// sweep expires due sessions and deletes tombstones past retention. It
// returns the hubs to close, the next deadline (zero: none) and the time
// it swept at.
func (st *store) sweep() ([]*relay.Hub, time.Time, time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.clock.Now()
	var closing []*relay.Hub
	var next time.Time
	for id, s := range st.byID {
		if st.expireDue(s) {
			closing = append(closing, s.hub)
		}
		deadline := s.ExpiresAt
		if s.tombstone {
			if !now.Before(s.reapAt) {
				st.reap(id, s)
				continue
			}
			deadline = s.reapAt
		}
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	return closing, next, now
}

// reap deletes a tombstone and every key that pointed at it.
func (st *store) reap(id string, s *Session) {
	delete(st.byID, id)
	st.tombs.Remove(s.tombEl)
	delete(st.byKey, s.hostKey)
	if s.hasView {
		delete(st.byKey, s.viewCookie)
	}
	st.tombstones--
	st.gauge()
}

// all returns every session, live or not, for shutdown.
func (st *store) all() []*Session {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*Session, 0, len(st.byID))
	for _, s := range st.byID {
		out = append(out, s)
	}
	return out
}

// counts reports live sessions and tombstones.
func (st *store) counts() (live, tombstones int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.live, st.tombstones
}

func (st *store) gauge() {
	st.m.Sessions.WithLabelValues("live").Set(float64(st.live))
	st.m.Sessions.WithLabelValues("tombstone").Set(float64(st.tombstones))
}

func (st *store) nudge() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}
