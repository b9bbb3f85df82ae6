// Package channel is the broker's executor channel: the /channel and
// /local/channel WebSocket endpoints, their authentication (a loopback
// browser page, or a paired environment's bearer hello), the remote that
// sends calls to a connected peer and settles each exactly once, and the
// routing source that sends calls for a peer's descriptors to it. What the
// environment's end shares with it is in package link.
//
// The page and each pairing are slots: a remembered catalog and at most
// one live connection. Calls are routed by remembered catalogs, so a
// descriptor whose executor is not connected is refused at once (no-page,
// machine-unreachable) instead of being unknown.
package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/connlimit"
	"github.com/airlock/airlock/broker/internal/frame"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// pairingsSettle is how long the pairings file must be quiet before the
// broker reloads it.
const pairingsSettle = 100 * time.Millisecond

// Options are what a Channel is built from.
type Options struct {
	// Config is the channel.* configuration (hello bound, loopback auth,
	// grace, in-flight bound).
	Config config.Channel
	// Data is the data folder: the pairings file and remembered catalogs.
	Data    string
	Logger  *slog.Logger
	Metrics *metrics.Registry
	// ViewSession reports whether a request carries the view cookie (and
	// view key) of a live session whose launch origin is the request's
	// Origin, and
	// returns a channel closed when that session ends (expiry): the page
	// it admitted is then closed (PROTOCOL sections 4 and 6). Required of
	// pages when Config.LoopbackAuth is set; nil then refuses every page.
	ViewSession func(*http.Request) (ended <-chan struct{}, ok bool)
	// Local is the source that outranks the channel (the broker's own
	// executors); it is consulted to log shadowed descriptors and to drop
	// page catalog entries for descriptors it holds.
	Local calls.Source
	// Port is the broker's port, used when a request does not say which
	// local address it arrived on. Nil is fine behind net/http.
	Port func() int
	// Watch follows the pairings file and reloads it when it changes.
	Watch bool
	// Receipts records each pairing a reload finds added or removed (a
	// name paired again is both), by name; nil records nothing.
	Receipts *receipts.Log
}

// Channel serves GET /channel and GET /local/channel and is the routing
// source of the page and the paired environments. It implements
// broker.Component and calls.Source.
//
// # Notes
//
//   - New starts the pairings watcher when Options.Watch is set; Close
//     stops it, closes every connection and waits for every goroutine.
//   - Reload re-reads the pairings file (the broker calls it on SIGHUP);
//     connections whose pairing is gone are closed 1008 bearer-refused.
type Channel struct {
	opts Options
	log  *slog.Logger
	m    *metrics.Registry

	set      atomic.Pointer[pairing.Set]
	routes   atomic.Pointer[routeTable]
	reloadMu sync.Mutex // serializes Reload

	mu       sync.Mutex
	page     *slot
	machines map[string]*slot // one per pairing
	shadows  map[shadow]bool
	conns    map[*websocket.Conn]struct{}
	serial   uint64 // the last connection attached
	onChange []func()
	draining bool
	closed   bool

	wg        sync.WaitGroup // connection handlers and background closes
	watcher   *pairing.Watcher
	closeOnce sync.Once
}

// New builds the channel from the pairings in Options.Data and the
// catalogs remembered there. A pairings file that cannot be used (group-
// or world-readable, or not valid) is logged and treated as empty, so it
// fails closed: no environment can connect until it is fixed.
func New(o Options) *Channel {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Metrics = metrics.OrNew(o.Metrics)
	c := &Channel{opts: o, log: o.Logger, m: o.Metrics, machines: map[string]*slot{},
		shadows: map[shadow]bool{}, conns: map[*websocket.Conn]struct{}{}}
	c.page = newSlot(identity{kind: Page})
	// The reasons this package owns, at zero (metrics declares the rest).
	for _, r := range []string{link.ReasonUnauthenticated, link.ReasonBearerRefused} {
		c.m.AuthRefusals.WithLabelValues("channel", r)
	}
	for _, r := range frameReasons {
		c.m.ChannelFramesRejected.WithLabelValues(r)
	}
	if !o.Config.LoopbackAuth {
		c.log.Warn(LoopbackAuthOffWarning)
	}
	set, err := c.loadPairings()
	c.set.Store(set)
	c.mu.Lock()
	c.applyPairings(set, err == nil)
	c.rebuild()
	c.mu.Unlock()
	if o.Watch {
		w, err := pairing.Watch(o.Data, pairingsSettle, c.log, func() { _ = c.Reload() })
		if err != nil {
			c.log.Warn("pairings not watched; SIGHUP reloads them", "err", err)
		}
		c.watcher = w
	}
	return c
}

// OnChange registers fn to run whenever what the channel routes may have
// changed: a catalog accepted or forgotten, the pairings reloaded, a page
// or an environment connecting or leaving (an MCP server tells its
// clients to list the tools again). fn runs under the channel's lock, so
// it must return at once and not call back into the channel; Routes and
// Lookup take no lock and may be read from another goroutine.
func (c *Channel) OnChange(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onChange = append(c.onChange, fn)
}

// changed runs the OnChange functions, under c.mu.
func (c *Channel) changed() {
	for _, fn := range c.onChange {
		fn()
	}
}

// Mount registers the two endpoints; a browser page uses /local/channel,
// whose path its view cookie covers.
func (c *Channel) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /channel", c.serve)
	mux.HandleFunc("GET /local/channel", c.serve)
}

// Drain refuses new connections (503 before the upgrade). Connected peers
// go on answering the calls in flight.
func (c *Channel) Drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
}

// Close closes every connection (1001 going away; calls still in flight
// settle page-closed / machine-closed), stops the watcher and waits for
// every goroutine. If ctx ends first it cuts the connections still in
// their close handshake, waits for the goroutines all the same, and
// returns ctx's cause (RATIONALE.md, "What does Close do when its context
// ends?").
func (c *Channel) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed, c.draining = true, true
		for _, s := range c.slotsInOrder() {
			if p := s.peer.Load(); p != nil {
				c.kick(p, websocket.StatusGoingAway, link.ReasonGoingAway)
			}
		}
		for conn := range c.conns {
			c.background(func() { _ = conn.Close(websocket.StatusGoingAway, link.ReasonGoingAway) })
		}
		c.mu.Unlock()
		if c.watcher != nil {
			c.watcher.Stop()
		}
	})
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	for conn := range c.conns {
		_ = conn.CloseNow()
	}
	c.mu.Unlock()
	<-done
	return fmt.Errorf("channel: close: %w", context.Cause(ctx))
}

// Reload re-reads the pairings file. Connections whose pairing is gone
// (or was paired again with a new bearer) are closed 1008 bearer-refused,
// their calls settling machine-closed; the catalogs of removed pairings
// are forgotten. A file that cannot be used fails closed, as in New.
func (c *Channel) Reload() error {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	set, err := c.loadPairings()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.recordPairings(c.set.Load(), set)
	c.set.Store(set)
	for _, p := range c.applyPairings(set, err == nil) {
		c.log.Info("pairing revoked: connection closed", "executor", p.executor())
		c.kick(p, websocket.StatusPolicyViolation, link.ReasonBearerRefused)
	}
	c.rebuild()
	if err != nil {
		return fmt.Errorf("channel: reload: %w", err)
	}
	return nil
}

// recordPairings writes a receipt of each pairing removed from old or
// added in set.
func (c *Channel) recordPairings(old, set *pairing.Set) {
	for _, name := range old.Names() {
		if d, _ := old.Digest(name); !set.Has(name, d) {
			c.opts.Receipts.Event(receipts.KindPairingRemoved, name, "")
		}
	}
	for _, name := range set.Names() {
		if d, _ := set.Digest(name); !old.Has(name, d) {
			c.opts.Receipts.Event(receipts.KindPairingAdded, name, "")
		}
	}
}

// loadPairings reads the pairings file, or an empty set if it cannot be
// used.
func (c *Channel) loadPairings() (*pairing.Set, error) {
	set, err := pairing.Load(c.opts.Data)
	if err != nil {
		c.log.Error("pairings file not used: no environment can connect until it is fixed",
			"path", pairing.Path(c.opts.Data), "err", err)
		return pairing.Empty(), err
	}
	// An operator who just ran `airlock pair add` sees it take effect.
	c.log.Info("pairings loaded", "pairings", set.Len())
	return set, nil
}

// applyPairings brings the machine slots in line with set, under c.mu,
// and returns the connections to close. When forget is set (the file was
// read) the remembered catalogs of removed pairings are deleted too.
func (c *Channel) applyPairings(set *pairing.Set, forget bool) []*peer {
	var revoked []*peer
	for name, s := range c.machines {
		if p := s.peer.Load(); p != nil && !set.Has(name, p.digest) {
			revoked = append(revoked, p)
		}
		// A name removed, or removed and paired again, is a different
		// environment now: what the old one advertised is forgotten.
		if d, ok := set.Digest(name); !ok || d != s.digest {
			delete(c.machines, name)
			if forget {
				if err := pairing.ForgetCatalog(c.opts.Data, name); err != nil {
					c.log.Warn("remembered catalog not deleted", "executor", s.executor, "err", err)
				}
			}
		}
	}
	for _, name := range set.Names() {
		if c.machines[name] == nil {
			d, _ := set.Digest(name)
			s := newSlot(identity{kind: Machine, name: name, digest: d})
			if forget {
				c.remember(s)
			}
			c.machines[name] = s
		}
	}
	return revoked
}

func (c *Channel) pairings() *pairing.Set { return c.set.Load() }

// serve is GET /channel: upgrade, authenticate, then serve the peer until
// its connection ends.
func (c *Channel) serve(w http.ResponseWriter, r *http.Request) {
	if c.isDraining() {
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	// The Origin rule is applied after the upgrade, so a refused page
	// learns why from the close frame; the library's own check must not
	// decide. A page that offered its view key is answered the view
	// protocol, never the key (PROTOCOL section 3).
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true,
		Subprotocols: []string{contract.ViewProtocol}})
	if err != nil {
		return // not a WebSocket upgrade; Accept answered it
	}
	if !c.track(conn) {
		_ = conn.Close(websocket.StatusGoingAway, link.ReasonGoingAway)
		return
	}
	defer c.untrack(conn)
	v := c.authenticate(r, conn)
	switch {
	case v.done:
		_ = conn.CloseNow()
	case v.reason != "":
		c.refuse(conn, v.reason)
	default:
		// Authenticated: from here the cap never closes it to make room.
		connlimit.Established(r.Context())
		c.run(conn, v.id)
	}
}

// run attaches an authenticated connection and reads its frames until it
// ends, then releases it: its calls settle closed.
func (c *Channel) run(conn *websocket.Conn, id identity) {
	p := &peer{identity: id, conn: conn, out: link.NewWriter(conn)}
	defer p.out.Stop()
	p.remote = NewRemote(id.kind, p, RemoteOptions{MaxInflight: c.opts.Config.MaxInflight, Metrics: c.m, Logger: c.log})
	if code, reason := c.attach(p); reason != "" {
		if code == websocket.StatusPolicyViolation {
			c.refuse(conn, reason)
		} else {
			_ = conn.Close(code, reason)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	pinged := make(chan struct{})
	go func() { defer close(pinged); link.Keepalive(ctx, conn, &p.act) }()
	watched := make(chan struct{})
	go func() { defer close(watched); c.watchSession(ctx, p) }()
	err := c.readLoop(p)
	cancel()
	<-pinged
	<-watched
	c.mu.Lock()
	c.release(p)
	c.mu.Unlock()
	_ = conn.CloseNow()
	c.log.Info("executor disconnected", "executor", p.executor(), "code", int(websocket.CloseStatus(err)))
}

// watchSession closes a page when the session whose view cookie admitted
// it ends (PROTOCOL section 4: at expiresAt every socket of the session
// is closed 4402): it is released at once, so its calls in flight settle
// page-closed and later calls for its catalog are refused no-page. It
// returns when ctx ends (the connection did) or at once for a peer tied
// to no session.
func (c *Channel) watchSession(ctx context.Context, p *peer) {
	if p.sessionEnded == nil {
		return
	}
	select {
	case <-ctx.Done():
	case <-p.sessionEnded:
		c.mu.Lock()
		// PROTOCOL section 4.7 closes every socket of an expired session
		// 4402 with the code's name as reason; the page's is one of them.
		c.kick(p, websocket.StatusCode(contract.CloseCredentialExpired), string(contract.CredentialExpired))
		c.mu.Unlock()
		c.log.Info("page closed: its session ended", "executor", p.executor())
	}
}

// readLoop dispatches the peer's frames: a control message (its catalog)
// or an answer. It returns the error that ended the connection.
func (c *Channel) readLoop(p *peer) error {
	for {
		data, err := p.act.ReadFrame(p.conn, maxFrameBytes)
		switch {
		case errors.Is(err, frame.ErrDiscarded):
			c.m.ChannelFramesRejected.WithLabelValues(string(wire.Malformed)).Inc()
			c.log.Warn("channel frame rejected", "peer", string(p.kind), "reason", "binary or oversized")
		case err != nil:
			return err
		default:
			// Answers are the common case: parse as one first, and look
			// for a "type" key only in frames that are not.
			a, foreign, err := wire.ParsePeerAnswer(data)
			if err != nil && wire.IsControl(data) {
				c.control(p, data)
				continue
			}
			_ = p.remote.take(a, foreign, err)
		}
	}
}

// attach makes p its slot's connection, replacing (closing 1000) an older
// one. It refuses when the broker is closing, or when p's pairing was
// revoked between its hello and now.
func (c *Channel) attach(p *peer) (websocket.StatusCode, string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return websocket.StatusGoingAway, link.ReasonGoingAway
	}
	s := c.slotOf(p.identity)
	if s == nil || (p.kind == Machine && !c.pairings().Has(p.name, p.digest)) {
		c.mu.Unlock()
		return websocket.StatusPolicyViolation, link.ReasonBearerRefused
	}
	p.slot = s
	c.serial++
	p.serial = c.serial
	old := s.peer.Swap(p)
	c.m.ChannelPeers.WithLabelValues(string(p.kind)).Inc()
	c.m.WSConnections.WithLabelValues("channel", string(p.kind)).Inc()
	if old != nil {
		c.kick(old, websocket.StatusNormalClosure, replacedReason(p.kind))
	}
	c.changed()
	c.mu.Unlock()
	c.log.Info("executor connected", "executor", p.executor(), "replaced", old != nil)
	return 0, ""
}

func replacedReason(k Kind) string {
	if k == Page {
		return link.ReasonPageReplaced
	}
	return link.ReasonEnvironmentReplaced
}

// release detaches p once, under c.mu: it is no longer its slot's
// connection, later calls are refused offline, and its calls in flight
// settle closed. Its slot's catalog stays remembered: a page's until
// another page's catalog replaces it (accept), a pairing's until the
// pairing is removed.
func (c *Channel) release(p *peer) {
	p.leave.Do(func() {
		p.gone.Store(true)
		p.slot.peer.CompareAndSwap(p, nil)
		p.remote.Abandon()
		c.m.ChannelPeers.WithLabelValues(string(p.kind)).Dec()
		c.m.WSConnections.WithLabelValues("channel", string(p.kind)).Dec()
		c.changed()
	})
}

// kick releases p at once, under c.mu, and closes its connection with
// code and reason in the background (the close handshake may take a few
// seconds).
func (c *Channel) kick(p *peer, code websocket.StatusCode, reason string) {
	c.release(p)
	c.background(func() { _ = p.conn.Close(code, reason) })
}

// background runs f on a goroutine that Close waits for.
func (c *Channel) background(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

func (c *Channel) isDraining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining
}

// track registers a connection for Close; false once the channel is
// closed.
func (c *Channel) track(conn *websocket.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.conns[conn] = struct{}{}
	c.wg.Add(1)
	return true
}

func (c *Channel) untrack(conn *websocket.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
	c.wg.Done()
}

// Stats is what the channel holds now, for tests and operators.
type Stats struct {
	Conns   int // WebSocket connections, authenticated or not
	Peers   int // connected executors
	Pending int // calls awaiting an answer
}

// Stats sums every slot.
func (c *Channel) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Conns: len(c.conns)}
	for _, s := range c.slotsInOrder() {
		if p := s.peer.Load(); p != nil {
			st.Peers++
			st.Pending += p.remote.Pending()
		}
	}
	return st
}
