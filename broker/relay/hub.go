// Package relay is the per-session relay hub of /local/ws: who is
// connected, where each validated message goes, snapshot and request
// routing, and teardown. It knows nothing of sockets: a connection is an
// Outbox, so the routing rules are tested in memory.
//
// One mutex guards each Hub; every method takes it for the whole
// operation and never blocks inside it (Outbox.Offer does not block).
package relay

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"slices"
	"sync"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/metrics"
)

// Outbox is a connection's bounded outbound queue, as the hub sees it
// (a Queue behind a socket).
type Outbox interface {
	// Offer queues a frame without blocking. It returns false when the
	// frame does not fit the queue's bounds; the hub then drops the
	// connection.
	Offer(frame []byte) bool
	// OfferShare queues a frame only when the queue stays within the
	// share of its bounds open to view traffic (see Queue.OfferShare). It
	// returns false, queuing nothing, otherwise; the hub then refuses the
	// view (busy) and keeps the host.
	OfferShare(frame []byte) bool
	// OfferNotice queues a small frame the broker makes because of a
	// view (see Queue.OfferNotice) within the queue's byte bound only.
	// False queues nothing; the hub then drops the notice, never the
	// connection.
	OfferNotice(frame []byte) bool
	// Close asks the connection to close with code and reason, without
	// waiting. It is idempotent; frames offered afterwards are discarded.
	Close(code contract.CloseCode, reason string)
}

// Options configure a Hub.
type Options struct {
	SessionID string
	// Capabilities are the session's, stated in every connected (PROTOCOL
	// section 4.3) as mint and bootstrap state them.
	Capabilities contract.Capabilities
	// MaxViews bounds the session's view connections.
	MaxViews int
	// MaxRequestsPerView bounds one view's requests in flight
	// (local.max_requests_per_view); past it a request is refused busy.
	// Zero means DefaultMaxRequestsPerView.
	MaxRequestsPerView int
	// Metrics nil counts into a private registry (metrics.OrNew).
	Metrics *metrics.Registry
	// Logger may be nil (discarded).
	Logger *slog.Logger
}

// Limits of one session's routing tables.
const (
	// MaxPending bounds requests in flight per session.
	MaxPending = 4096
	// DefaultMaxRequestsPerView is the default bound of PROTOCOL section
	// 4.6 on one view's requests in flight.
	DefaultMaxRequestsPerView = 64
	// maxRetired bounds how many cancelled or abandoned request ids are
	// remembered so their late replies are dropped silently.
	maxRetired = 4096
)

// Hub relays one workspace session: one host and many views.
type Hub struct {
	opts Options

	mu      sync.Mutex
	closed  bool
	host    *Member
	epoch   int   // bumped by each new host
	lastSeq int64 // last hostSequence relayed in this epoch
	views   map[string]*Member
	fanout  []*Member // the views of views, in a slice: host state goes to each (see joinView)
	asks    []*Member // views with a pending snapshotRequest, oldest first
	askRaw  map[*Member][]byte
	pending map[string]*request
	retired map[string]uint64 // request id -> generation it was retired at
	retOrd  []retiredID
	retGen  uint64
	dropped []*Member // marked dead during this operation, torn down before unlock
}

// Member is one registered connection.
type Member struct {
	role contract.Role
	id   string // view id; "" for the host
	out  Outbox
	// inflight counts the view's requests pending (guarded by the hub's
	// mu), bounded by Options.MaxRequestsPerView.
	inflight int
	slot     int  // a view's index in the hub's fanout (guarded by the hub's mu)
	dead     bool // no more frames to or from it (guarded by the hub's mu)
	left     bool // torn down
}

// Role is the member's role.
func (m *Member) Role() contract.Role { return m.role }

// ViewID is the member's view id ("" for the host).
func (m *Member) ViewID() string { return m.id }

// New makes an empty hub.
func New(o Options) *Hub {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxRequestsPerView <= 0 {
		o.MaxRequestsPerView = DefaultMaxRequestsPerView
	}
	o.Metrics = metrics.OrNew(o.Metrics)
	return &Hub{
		opts:    o,
		views:   map[string]*Member{},
		askRaw:  map[*Member][]byte{},
		pending: map[string]*request{},
		retired: map[string]uint64{},
	}
}

// Join registers a connection that completed hello and sends it connected
// (and the notifications its arrival causes). A second host gets a refusal
// (HOST_ALREADY_CONNECTED) and is not registered; the first host and the
// views are untouched. A view is refused ErrHostBusy, and not registered,
// while its viewState does not fit the share of the host's queue open to
// views: joins then cannot grow the host's queue, so what views that leave
// later make the broker tell the host is bounded by the views there are.
func (h *Hub) Join(role contract.Role, out Outbox) (*Member, *contract.Refusal, error) {
	h.mu.Lock()
	defer h.unlock()
	switch {
	case h.closed:
		return nil, nil, ErrClosed
	case role == contract.Host && h.host != nil:
		return nil, &contract.Refusal{Code: contract.HostAlreadyConnected, Detail: contract.DetailHostConnected}, nil
	case role == contract.View && len(h.views) >= h.opts.MaxViews:
		return nil, nil, ErrTooManyViews
	}
	m := &Member{role: role, out: out}
	if role == contract.Host {
		h.joinHost(m)
	} else if !h.joinView(m) {
		h.countHostBusy(metrics.HostBusyJoinRefused)
		return nil, nil, ErrHostBusy
	}
	return m, nil, nil
}

func (h *Hub) joinHost(m *Member) {
	h.host, h.epoch, h.lastSeq = m, h.epoch+1, 0
	ids := h.viewIDs()
	h.send(m, "connected", hostConnected{contract.Host.String(), h.epoch, ids, h.opts.Capabilities})
	for _, id := range ids {
		h.send(h.views[id], "connectionState", connectionState{"connected", h.epoch})
	}
	for _, v := range slices.Clone(h.asks) {
		if !h.forwardShare(m, h.askRaw[v], "snapshotRequest") {
			h.dropAsk(v)
			h.offer(v, ErrorFrame(h.opts.SessionID, refuse(contract.DetailBusy)))
		}
	}
}

// joinView registers a view unless the host's queue has no room in the
// views' share for its viewState; false registers nothing.
func (h *Hub) joinView(m *Member) bool {
	m.id = newViewID()
	hostUp := h.host != nil
	if hostUp && !h.host.dead {
		if !h.host.out.OfferShare(Frame(h.opts.SessionID, "viewState", viewState{m.id, "connected"})) {
			return false
		}
		h.count("viewState", dirBroker)
	}
	h.views[m.id] = m
	// Host state is offered to every view: walking a slice rather than
	// the map costs less per view (broker/session/RATIONALE.md, "Why does the closing
	// check of a relay socket live in its queue, and the hub fan out over
	// a slice?").
	m.slot = len(h.fanout)
	h.fanout = append(h.fanout, m)
	h.send(m, "connected", viewConnected{contract.View.String(), m.id, hostUp, h.epoch, h.opts.Capabilities})
	h.send(m, "connectionState", connectionState{stateWord(hostUp), h.epoch})
	return true
}

// Leave tears a member down: idempotent, whatever the member's state.
func (h *Hub) Leave(m *Member) {
	h.mu.Lock()
	defer h.unlock()
	h.leave(m)
}

func (h *Hub) leave(m *Member) {
	if m.left {
		return
	}
	m.left, m.dead = true, true
	if h.closed {
		return
	}
	if m.role == contract.Host {
		h.leaveHost(m)
	} else {
		h.leaveView(m)
	}
}

func (h *Hub) leaveHost(m *Member) {
	if h.host != m {
		return
	}
	h.host = nil
	h.clearPending()
	clear(h.retired)
	h.retOrd = h.retOrd[:0]
	for _, id := range h.viewIDs() {
		h.send(h.views[id], "connectionState", connectionState{"disconnected", h.epoch})
	}
}

func (h *Hub) leaveView(m *Member) {
	delete(h.views, m.id)
	last := h.fanout[len(h.fanout)-1]
	h.fanout[m.slot], last.slot = last, m.slot
	h.fanout[len(h.fanout)-1] = nil
	h.fanout = h.fanout[:len(h.fanout)-1]
	h.dropAsk(m)
	h.cancelRequestsOf(m)
	h.notifyHost("viewState", viewState{m.id, "disconnected"})
}

// Close ends the session: every member is marked dead and its socket asked
// to close with code and reason (4402 at expiry, 1001 at shutdown). Joins
// fail with ErrClosed afterwards.
func (h *Hub) Close(code contract.CloseCode, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	all := make([]*Member, 0, len(h.views)+1)
	if h.host != nil {
		all = append(all, h.host)
	}
	for _, v := range h.views {
		all = append(all, v)
	}
	for _, m := range all {
		m.dead = true
		m.out.Close(code, reason)
	}
	h.host, h.views, h.fanout, h.asks = nil, map[string]*Member{}, nil, nil
	clear(h.askRaw)
	h.clearPending()
	clear(h.retired)
}

// Stats is a snapshot of the hub's tables, for tests and the drain check.
type Stats struct {
	Host     bool
	Views    int
	Asks     int
	Pending  int
	Retired  int
	Epoch    int
	Closed   bool
	LastSeq  int64
	Sessions int // always 1; lets callers sum Stats
}

// Stats reports the hub's table sizes.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Host: h.host != nil, Views: len(h.views), Asks: len(h.asks), Pending: len(h.pending),
		Retired: len(h.retired), Epoch: h.epoch, Closed: h.closed, LastSeq: h.lastSeq, Sessions: 1}
}

// unlock tears down every member dropped during the operation (a full
// queue), which may drop others in turn, then releases the lock.
func (h *Hub) unlock() {
	for len(h.dropped) > 0 {
		m := h.dropped[0]
		h.dropped = h.dropped[1:]
		h.leave(m)
	}
	h.mu.Unlock()
}

// drop marks a member that cannot keep up as dead and closes its socket;
// its teardown runs before the hub unlocks.
func (h *Hub) drop(m *Member) {
	if m.dead {
		return
	}
	m.dead = true
	m.out.Close(contract.CloseTryAgainLater, contract.ReasonSlowConsumer)
	switch {
	case m.role == contract.Host:
		// Only the host's own traffic counts against its whole queue:
		// view traffic and the notices views cause never drop it.
		h.opts.Logger.Warn("relay: host dropped: its outbound queue is full", "reason", contract.ReasonSlowConsumer)
		h.opts.Metrics.RelayDroppedHosts.Inc()
	default:
		h.opts.Metrics.RelayDropped.Inc()
	}
	h.dropped = append(h.dropped, m)
}

func (h *Hub) viewIDs() []string {
	ids := make([]string, 0, len(h.views))
	for id, v := range h.views {
		if !v.dead {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// newViewID is an unguessable view id: view ids travel to the host and
// other tools, so they must not be predictable, but they are not secrets.
func newViewID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "v_" + base64.RawURLEncoding.EncodeToString(b)
}
