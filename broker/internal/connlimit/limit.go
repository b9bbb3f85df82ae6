// Package connlimit bounds what clients can hold on the broker's
// listeners. A cap on open connections (WebSockets included, since each is
// a descriptor) first makes room by closing the oldest connection that is
// only waiting on its client (for request headers, for the rest of a body,
// idle on keep-alive, upgraded but not yet authenticated, or blocked
// writing a response it does not read), and refuses the new connection
// with a 503 only when none is; a request body must arrive within a
// bound, and so must each write of a response.
//
// A WebSocket is evictable until its application marks it established
// (Established), and a request whose response write is blocked on a client
// that is not reading is evictable for as long as that write lasts.
// Established WebSockets and requests in their handlers otherwise are
// never closed to make room: they are the service the cap protects. See
// RATIONALE.md, "Why evict slow connections before refusing new ones?".
package connlimit

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/airlock/airlock/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// phase is what a connection is doing; it decides whether the cap may
// close it.
type phase uint8

const (
	phaseHeaders     phase = iota // accepted; its request headers are not complete
	phaseBody                     // in a request whose body is still arriving
	phaseIdle                     // keep-alive, between requests
	phaseUpgrade                  // a WebSocket not yet authenticated (see Established)
	phaseWriting                  // a response write the client is not reading
	phaseHandler                  // a request being served
	phaseEstablished              // an authenticated WebSocket
)

// evictable reports whether a connection in p waits only on its client.
func (p phase) evictable() bool { return p <= phaseWriting }

// hijacked reports whether a WebSocket owns the connection.
func (p phase) hijacked() bool { return p == phaseUpgrade || p == phaseEstablished }

// label is p's value of the evicted metric's phase label.
func (p phase) label() string {
	return [...]string{"headers", "body", "idle", "upgrade", "writing"}[p]
}

// Limiter tracks every connection accepted through its listeners. One
// Limiter may serve several listeners (the main one and the metrics one):
// the cap is one budget of descriptors.
type Limiter struct {
	max     int
	open    prometheus.Gauge
	refused prometheus.Counter
	evicted [phaseWriting + 1]prometheus.Counter

	mu    sync.Mutex
	conns list.List // of *conn, oldest first
}

// New returns a Limiter that keeps at most max connections open.
func New(max int, reg *metrics.Registry) *Limiter {
	reg = metrics.OrNew(reg)
	l := &Limiter{max: max, open: reg.ConnectionsOpen, refused: reg.ConnectionsRefused}
	for p := phaseHeaders; p <= phaseWriting; p++ {
		l.evicted[p] = reg.ConnectionsEvicted.WithLabelValues(p.label())
	}
	return l
}

// conn is an admitted connection. Close releases its slot once.
type conn struct {
	net.Conn
	l     *Limiter
	elem  *list.Element // nil once released; guarded by l.mu
	phase phase         // guarded by l.mu
}

func (c *conn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

// CloseWrite half-closes when the connection can, so net/http's lingering
// close (which looks for this method) still sends its FIN first.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// admit takes a slot for nc, closing the oldest evictable connection when
// the cap is full. It returns nil when no slot can be had.
func (l *Limiter) admit(nc net.Conn) *conn {
	l.mu.Lock()
	victim := l.makeRoomLocked()
	if l.conns.Len() >= l.max {
		l.mu.Unlock()
		return nil
	}
	c := &conn{Conn: nc, l: l, phase: phaseHeaders}
	c.elem = l.conns.PushBack(c)
	l.mu.Unlock()
	l.open.Inc()
	if victim != nil {
		_ = victim.Conn.Close()
	}
	return c
}

// makeRoomLocked releases the oldest evictable connection when the cap is
// full and returns it for the caller to close outside the lock.
func (l *Limiter) makeRoomLocked() *conn {
	if l.conns.Len() < l.max {
		return nil
	}
	for e := l.conns.Front(); e != nil; e = e.Next() {
		c := e.Value.(*conn)
		if c.phase.evictable() {
			l.evicted[c.phase].Inc()
			l.releaseLocked(c)
			return c
		}
	}
	return nil
}

// release frees c's slot; a second call does nothing.
func (l *Limiter) release(c *conn) {
	l.mu.Lock()
	l.releaseLocked(c)
	l.mu.Unlock()
}

func (l *Limiter) releaseLocked(c *conn) {
	if c.elem == nil {
		return
	}
	l.conns.Remove(c.elem)
	c.elem = nil
	l.open.Dec()
}

// set puts c in phase to. A hijacked connection's phase is the
// WebSocket's to change (see Established), never net/http's.
func (l *Limiter) set(c *conn, to phase) {
	l.mu.Lock()
	if !c.phase.hijacked() {
		c.phase = to
	}
	l.mu.Unlock()
}

// move puts c in phase to only if it is in phase from, so a late move
// never undoes what net/http reported since.
func (l *Limiter) move(c *conn, from, to phase) {
	l.mu.Lock()
	if c.phase == from {
		c.phase = to
	}
	l.mu.Unlock()
}

// ConnState is the http.Server hook that follows each connection through
// net/http's states.
func (l *Limiter) ConnState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		l.set(c, phaseHandler)
	case http.StateIdle:
		l.set(c, phaseIdle)
	case http.StateHijacked:
		l.set(c, phaseUpgrade)
	case http.StateClosed:
		l.release(c)
	}
}

type connKey struct{}

// ConnContext is the http.Server hook that lets BoundBody find a request's
// connection.
func (l *Limiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

func connOf(r *http.Request) *conn {
	c, _ := r.Context().Value(connKey{}).(*conn)
	return c
}

// Established marks the WebSocket upgraded from the request whose context
// is ctx as authenticated: from then on the cap never closes it. Until
// then an upgraded connection is evictable like a slow client, so
// upgrades that never authenticate (no hello, a refused Origin or cookie,
// a refusal's close handshake the client never answers) cannot hold the
// cap. It does nothing for a connection not under a Limiter.
func Established(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*conn); ok {
		c.l.move(c, phaseUpgrade, phaseEstablished)
	}
}
