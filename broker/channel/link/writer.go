package link

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/internal/frame"
)

// Writer puts frames on one connection, one at a time, each bounded by a
// deadline of its own through the connection's frame.Watchdog (RATIONALE.md,
// "Why are channel writes bounded by one timer per connection?"). Both
// ends of /channel write through one.
//
// # Notes
//
//   - One write is in flight at a time: a writer takes the turn first
//     (Take, or Write, which waits for it), so the watchdog always knows
//     which write it bounds. A turn is held only for one write, and that
//     write is bounded, so waiting for one is bounded too: by the writes
//     ahead, each cut at its deadline, and once one is cut every later
//     write fails at once.
//   - Waiting for the turn can itself be given up (Take's stop and
//     expired channels): the broker's calls stop waiting at their own
//     timeout or when their caller goes away.
type Writer struct {
	conn *websocket.Conn
	turn chan struct{} // holds one token while a write has the turn
	wd   *frame.Watchdog
}

// NewWriter is the writer of conn.
func NewWriter(conn *websocket.Conn) *Writer {
	return &Writer{conn: conn, turn: make(chan struct{}, 1), wd: frame.NewWatchdog(conn)}
}

// Take waits for the turn to write, unless stop is closed or expired
// fires first (either may be nil: never). It reports whether it got the
// turn; then the caller must call WriteTaken exactly once.
func (w *Writer) Take(stop <-chan struct{}, expired <-chan time.Time) bool {
	select {
	case w.turn <- struct{}{}:
		return true
	default:
	}
	select {
	case w.turn <- struct{}{}:
		return true
	case <-stop:
	case <-expired:
	}
	return false
}

// WriteTaken writes one text frame with the turn Take gave, and gives the
// turn back. The connection is cut if the write is still in flight at
// deadline.
func (w *Writer) WriteTaken(data []byte, deadline time.Time) error {
	defer func() { <-w.turn }()
	if !w.wd.Begin(deadline) {
		return frame.ErrWriteCut
	}
	err := w.conn.Write(context.Background(), websocket.MessageText, data)
	w.wd.End()
	return err
}

// Write waits for the turn and writes one text frame, which must be
// written within timeout of its turn coming.
func (w *Writer) Write(data []byte, timeout time.Duration) error {
	w.Take(nil, nil)
	return w.WriteTaken(data, time.Now().Add(timeout))
}

// Stop releases the watchdog; the connection's owner calls it once the
// connection is gone. Later writes are refused with frame.ErrWriteCut, so
// none can go unbounded.
func (w *Writer) Stop() { w.wd.Stop() }
