package frame

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Watchdog bounds the writes of one connection, each by a deadline of its
// own, with one timer per connection and neither a context, a lock nor a
// timer reset per write (RATIONALE.md, "Why do the relay and /channel
// share one write watchdog, armed only when quiet?"). Both ends of
// /channel (Writer) and every /local/ws socket write through one.
//
// A write is passed to coder/websocket with context.Background(): a
// context with a deadline costs context.WithTimeout four allocations and
// the library six more per frame (an AfterFunc per write). Instead the
// writer records the deadline of the write in flight (Begin, one atomic
// store; End clears it), and the timer, armed by a write when it is quiet
// or set to fire after that write's deadline, fires: it cuts the
// connection (CloseNow, which is what the library does when a write's
// context ends) if the write then in flight has passed its deadline,
// re-arms for a later one's, and goes quiet when none is in flight. A
// busy connection whose deadlines only move later (a fixed timeout per
// write) thus pays one timer firing per timeout, not a reset per frame.
//
// # Notes
//
//   - One write is in flight at a time (the caller's writer goroutine, or
//     Writer's turn).
//   - Once cut (a write overran, Cut, Stop), no write begins again.
//   - Atomics are sequentially consistent: Begin stores before it loads
//     cut and the armed time, and Cut and the firing store before they
//     load the write in flight, so a write either sees the cut or is seen
//     by it, and is either seen by a pending firing or arms one.
type Watchdog struct {
	conn  *websocket.Conn
	epoch time.Time // origin of the times below; monotonic

	inflight atomic.Int64 // the deadline of the write in flight, ns since epoch + 1; 0: none
	armed    atomic.Int64 // when the timer fires, ns since epoch + 1; 0: quiet (set under mu)
	cut      atomic.Bool  // writes are cut: one overran, Cut or Stop

	mu    sync.Mutex
	timer *time.Timer // made when first armed
}

// NewWatchdog is the write watchdog of conn.
func NewWatchdog(conn *websocket.Conn) *Watchdog {
	return &Watchdog{conn: conn, epoch: time.Now()}
}

// Begin records a write that must end by deadline, unless writes are cut
// (then it reports false and the caller must not write). The caller calls
// End when the write returns.
func (w *Watchdog) Begin(deadline time.Time) bool {
	d := max(int64(deadline.Sub(w.epoch))+1, 1)
	w.inflight.Store(d)
	if w.cut.Load() {
		w.inflight.Store(0)
		return false
	}
	if a := w.armed.Load(); a == 0 || a > d {
		w.arm(d)
	}
	return true
}

// End records that the write in flight returned.
func (w *Watchdog) End() { w.inflight.Store(0) }

// InFlight reports whether a write is in flight.
func (w *Watchdog) InFlight() bool { return w.inflight.Load() != 0 }

// Cut refuses every later write and cuts the connection if a write is in
// flight: the kill grace of a relay socket that is being dropped. With
// none in flight the connection is left to its owner (to close).
func (w *Watchdog) Cut() {
	w.cut.Store(true)
	if w.inflight.Load() != 0 {
		_ = w.conn.CloseNow()
	}
}

// Stop refuses every later write and releases the timer; the
// connection's owner calls it once the connection is gone.
func (w *Watchdog) Stop() {
	w.cut.Store(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// now is the current time on the scale of inflight and armed.
func (w *Watchdog) now() int64 { return int64(time.Since(w.epoch)) + 1 }

// arm makes the timer fire at d, unless it will fire by then already, or
// writes are cut (Stop released the timer; a write cannot begin).
func (w *Watchdog) arm(d int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a := w.armed.Load(); (a != 0 && a <= d) || w.cut.Load() {
		return
	}
	w.armed.Store(d)
	in := time.Duration(d - w.now())
	if w.timer == nil {
		w.timer = time.AfterFunc(in, w.expire)
	} else {
		w.timer.Reset(in)
	}
}

// expire is the timer's firing: it cuts the connection when the write in
// flight has passed its deadline, re-arms for a later deadline, and goes
// quiet when no write is in flight (the next write arms it). A firing
// left over from an earlier arming finds a later or no write and does
// the same.
func (w *Watchdog) expire() {
	w.mu.Lock()
	w.armed.Store(0)
	d := w.inflight.Load()
	late := false
	if d != 0 {
		now := w.now()
		if late = now >= d; late {
			w.cut.Store(true)
		} else if !w.cut.Load() {
			w.armed.Store(d)
			w.timer.Reset(time.Duration(d - now))
		}
	}
	w.mu.Unlock()
	if late {
		_ = w.conn.CloseNow()
	}
}
