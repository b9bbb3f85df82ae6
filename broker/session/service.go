// Package session is the local browser broker's session half: minting
// workspace sessions, the one-time bootstrap that trades a fragment
// credential for a view cookie, the /local/ws sockets with their transport
// checks and handshake, expiry with tombstones and a reaper, and the
// built-in view page. Routing between the sockets of a session is the
// relay package's job; the frame contract and the /local vocabulary
// are broker/contract's.
package session

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/broker/relay"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/metrics"
)

// Options are what a Service is built from.
type Options struct {
	// Local is the local.* configuration (retention, limits, queues).
	Local config.Local
	// Token is the launch token; an unset token leaves minting inert (404).
	Token   httpx.Token
	Logger  *slog.Logger
	Metrics *metrics.Registry
	// Clock is the time source; nil means RealClock.
	Clock Clock
	// StorageKey is the key view pages seal their stored notes with
	// (LoadStorageKey); nil answers POST /local/storage-key 503.
	StorageKey []byte
	// Receipts records each session minted and ended, by id only; nil
	// records nothing.
	Receipts *receipts.Log
}

// Service mounts POST /local/sessions, POST /local/bootstrap, GET
// /local/ws and GET /local/view, and owns every session, socket and timer
// behind them. It implements broker.Component.
//
// # Notes
//
//   - New starts the reaper goroutine; Close stops it and every socket.
//   - ViewSession is the hook the executor channel uses to require a live
//     view cookie of a page, and to close the page when that session ends.
type Service struct {
	opts  Options
	clock Clock
	log   *slog.Logger
	m     *metrics.Registry
	store *store

	mu       sync.Mutex
	draining bool
	closed   bool
	sockets  map[*socket]struct{}
	conns    sync.WaitGroup // one per /local/ws handler past the upgrade

	stopReaper chan struct{}
	reaperDone chan struct{}
	closeOnce  sync.Once
}

// New builds the service and starts its reaper.
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Metrics = metrics.OrNew(o.Metrics)
	s := &Service{opts: o, clock: o.Clock, log: o.Logger, m: o.Metrics, sockets: map[*socket]struct{}{},
		stopReaper: make(chan struct{}), reaperDone: make(chan struct{})}
	retention := time.Duration(o.Local.TombstoneRetentionSeconds) * time.Second
	hubOpts := relay.Options{MaxViews: o.Local.MaxViewsPerSession, MaxRequestsPerView: o.Local.MaxRequestsPerView, Metrics: o.Metrics,
		Logger: o.Logger}
	limits := storeLimits{live: o.Local.MaxSessions, tombstones: o.Local.MaxTombstones}
	s.store = newStore(o.Clock, retention, limits, hubOpts, o.Metrics)
	s.store.receipts = o.Receipts
	if !o.Local.ViewKey {
		s.log.Warn(ViewKeyOffWarning)
	}
	go s.reaper(s.stopReaper, s.reaperDone)
	return s
}

// Mount registers the routes. Minting sits behind the launch token
// (inert 404 without one); the other routes need no token because nothing
// reaches them without a minted session.
func (s *Service) Mount(mux *http.ServeMux) {
	mux.Handle("POST /local/sessions", httpx.TokenGuard(s.opts.Token, s.authRefused, http.HandlerFunc(s.serveMint)))
	mux.Handle("DELETE /local/sessions/{id}", httpx.TokenGuard(s.opts.Token, s.authRefused, http.HandlerFunc(s.serveEnd)))
	mux.HandleFunc("POST /local/bootstrap", s.serveBootstrap)
	mux.HandleFunc("POST /local/storage-key", s.serveStorageKey)
	mux.HandleFunc("GET /local/ws", s.serveWS)
	s.mountView(mux)
}

// Drain stops minting: POST /local/sessions answers 503 from now on.
// Sessions and sockets go on until Close.
func (s *Service) Drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
}

// Close stops minting and the reaper, closes every socket with 1001 going
// away and waits for every socket goroutine. If ctx ends first it cuts the
// sockets still closing, waits for their goroutines all the same, and
// returns ctx's cause (RATIONALE.md, "What does Close do when its context
// ends?").
func (s *Service) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.draining, s.closed = true, true
		socks := make([]*socket, 0, len(s.sockets))
		for k := range s.sockets {
			socks = append(socks, k)
		}
		s.mu.Unlock()
		close(s.stopReaper)
		for _, sess := range s.store.all() {
			sess.hub.Close(contract.CloseGoingAway, contract.ReasonGoingAway)
		}
		for _, k := range socks {
			k.Close(contract.CloseGoingAway, contract.ReasonGoingAway)
		}
	})
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		<-s.reaperDone
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for k := range s.sockets {
		k.closeNow()
	}
	s.mu.Unlock()
	<-done
	return fmt.Errorf("session: close: %w", context.Cause(ctx))
}

// ViewSession reports whether r carries the view cookie
// (tensorviz_local_browser_<h>, with the right value, compared in constant
// time) of a live session (not expired, not a tombstone) whose launch
// origin is exactly r's Origin, with that session's view key (unless
// local.view_key is off), and returns a channel closed when that session
// ends. The executor channel uses it for VOICEBOX_LOOPBACK_AUTH:
// a cookie proves a browser page of that session, so it must be the
// session the connection's Origin names (any other live cookie, of
// another window or another loopback origin of this broker, does not
// authenticate it), and the page lives no longer than the session
// (PROTOCOL section 4.7).
func (s *Service) ViewSession(r *http.Request) (ended <-chan struct{}, ok bool) {
	origins := r.Header.Values("Origin")
	if len(origins) != 1 || origins[0] == "" {
		return nil, false
	}
	sess, _, err := s.admit(r, origins[0], true)
	if err != nil || sess.Origin != origins[0] {
		return nil, false
	}
	return sess.ended, true
}

// ViewCookieValid is ViewSession's verdict alone.
func (s *Service) ViewCookieValid(r *http.Request) bool {
	_, ok := s.ViewSession(r)
	return ok
}

// Stats is a summary of everything the service holds, for tests and the
// drain check.
type Stats struct {
	Live, Tombstones int // sessions by state
	Sockets          int // /local/ws sockets past the upgrade
	Hosts, Views     int // members registered in hubs
	Asks, Pending    int // snapshot asks and requests in flight
}

// Stats sums the tables of every session.
func (s *Service) Stats() Stats {
	var st Stats
	st.Live, st.Tombstones = s.store.counts()
	s.mu.Lock()
	st.Sockets = len(s.sockets)
	s.mu.Unlock()
	for _, sess := range s.store.all() {
		h := sess.hub.Stats()
		st.Views += h.Views
		st.Asks += h.Asks
		st.Pending += h.Pending
		if h.Host {
			st.Hosts++
		}
	}
	return st
}

func (s *Service) authRefused(endpoint string, c contract.Code) {
	s.m.AuthRefused(endpoint, string(c))
}
