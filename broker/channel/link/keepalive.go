package link

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/internal/frame"
)

// Keepalive timing: an authenticated connection is pinged this often and
// cut off when the pong does not come back in time, so a connection that
// died without a close (a crashed machine, a pulled cable) settles its
// calls closed rather than leaving the executor "connected" to nobody.
const (
	pingEvery = 15 * time.Second
	// PingTimeout is how long a pong may take.
	PingTimeout = 10 * time.Second
)

// Keepalive pings the other end of conn every 15 s until ctx ends; a pong
// missing for 10 s closes the connection at once, which ends its read
// loop, unless act (fed by act.ReadFrame) excuses it. Both ends of the
// channel run it, so either notices a peer that vanished without a close.
// A pong is only read while someone reads conn.
//
// # Notes
//   - A peer busy sending one long frame answers a ping only once the
//     frame is written (its pong waits behind it), however alive it is: a
//     64 MiB answer over a slow link, or on a loaded machine, takes longer
//     than the pong bound. Bytes still arriving are proof enough that the
//     peer is there.
//   - A reader handling the frame it has just read (parsing a 64 MiB
//     answer takes seconds under load) reads no pong until it is done, so
//     a pong missed then, or before the reader came back, proves nothing
//     either.
func Keepalive(ctx context.Context, conn *websocket.Conn, act *Activity) {
	keepalive(ctx, conn, act, pingEvery, PingTimeout)
}

func keepalive(ctx context.Context, conn *websocket.Conn, act *Activity, every, timeout time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := act.now()
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil && !act.excuses(sent) {
			_ = conn.CloseNow()
			return
		}
	}
}

// Activity notes, for Keepalive, when a connection last received bytes
// of a frame or its reader came back for the next one, and whether the
// reader is away handling a frame. Its zero value is ready to use.
type Activity struct {
	last atomic.Int64
	away atomic.Bool
}

// ReadFrame is frame.Read, noting the reader's return and each read of
// the frame; from its return until the next ReadFrame the reader is away.
func (a *Activity) ReadFrame(conn *websocket.Conn, limit int64) ([]byte, error) {
	a.away.Store(false)
	a.Note()
	defer a.away.Store(true)
	return frame.ReadNoting(conn, limit, a)
}

// Note records that bytes of a frame arrived now (frame.Noter).
func (a *Activity) Note() { a.last.Store(a.now()) }

// now is a monotonic reading that excuses compares against.
func (a *Activity) now() int64 { return time.Since(epoch).Nanoseconds() }

// excuses reports whether a pong missing since t proves nothing: the
// reader is away handling a frame, or it read bytes or came back at or
// after t.
func (a *Activity) excuses(t int64) bool { return a.away.Load() || a.last.Load() >= t }

// epoch anchors Activity's monotonic readings.
var epoch = time.Now()
