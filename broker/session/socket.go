package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/frame"
	"github.com/airlock/airlock/broker/relay"
)

// writeTimeout bounds one frame write; a peer that takes longer is cut
// off (its reader then ends its relay loop).
const writeTimeout = 30 * time.Second

// killGrace is how long a closing socket's in-flight write may go on
// before it is cut: a view dropped for not reading cannot take a close
// frame, and its writer must not sit out writeTimeout.
const killGrace = time.Second

// socket is one /local/ws connection: an outbound queue bounded in
// messages and bytes (relay.Queue), drained by a writer goroutine, so no
// sender ever waits on a slow peer. It is the relay.Outbox of its hub
// member.
//
// The writer runs only while there is something to do: the offer that
// finds the queue idle starts it, and it exits once the queue is empty,
// so an idle view holds one goroutine (its reader), not two (RATIONALE.md,
// "Why does an idle view's socket have no writer goroutine?"). At most
// one writer runs at a time, so frames go out in queue order.
type socket struct {
	conn  *websocket.Conn
	queue *relay.Queue
	done  chan struct{} // closed when the socket is finished: closed by its writer, or its writes failed

	// The write bound, without a lock, a context or a timer reset per
	// write (see write). Cut by closeNow, the kill grace running out, or
	// a write overrunning writeTimeout.
	wd *frame.Watchdog

	mu      sync.Mutex
	running bool // a writer goroutine is running (or about to)
	closing bool
	code    websocket.StatusCode
	reason  string
	kill    *time.Timer
}

func newSocket(conn *websocket.Conn, queue, queueBytes int) *socket {
	return &socket{conn: conn, queue: relay.NewQueue(queue, queueBytes), done: make(chan struct{}),
		wd: frame.NewWatchdog(conn)}
}

// Offer queues a frame without blocking; false when it does not fit the
// queue's bounds. Frames offered after Close are discarded (and reported
// as accepted: the connection is already going away).
func (k *socket) Offer(frame []byte) bool { return k.offer(frame, k.queue.Offer) }

// OfferShare queues a frame within the share of the queue open to view
// traffic (relay.Queue.OfferShare).
func (k *socket) OfferShare(frame []byte) bool { return k.offer(frame, k.queue.OfferShare) }

// OfferNotice queues a broker notice a view caused, within the byte bound
// only (relay.Queue.OfferNotice).
func (k *socket) OfferNotice(frame []byte) bool { return k.offer(frame, k.queue.OfferNotice) }

func (k *socket) offer(frame []byte, push func([]byte) bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closing {
		return true
	}
	if !push(frame) {
		return false
	}
	k.startWriter()
	return true
}

// startWriter starts the writer unless one is running; k.mu is held.
func (k *socket) startWriter() {
	if !k.running {
		k.running = true
		go k.writeLoop()
	}
}

// Close asks the writer to close the socket with code and reason at once,
// dropping whatever is queued. Idempotent.
func (k *socket) Close(code contract.CloseCode, reason string) { k.closeWith(code, reason, false) }

// closeNow cuts the connection without a close handshake: an in-flight
// write is cancelled and the reader fails at once.
func (k *socket) closeNow() {
	k.wd.Cut()
	_ = k.conn.CloseNow()
}

// refuse queues a last frame (the typed error of a failed handshake) and
// closes with code and reason after it is written.
func (k *socket) refuse(frame []byte, code contract.CloseCode, reason string) {
	k.Offer(frame)
	k.closeWith(code, reason, true)
}

func (k *socket) closeWith(code contract.CloseCode, reason string, flush bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closing {
		return
	}
	k.closing, k.code, k.reason = true, websocket.StatusCode(code), reason
	if !flush { // else the writer writes what is queued before closing
		k.queue.Discard() // its bytes are released now, not when the writer wakes
		k.kill = time.AfterFunc(killGrace, k.cutWrites)
	}
	k.startWriter() // a running writer sees closing once the queue is empty
}

// writeLoop drains the queue, then exits while the socket is open, or
// performs the close handshake (bounded by the library to a few seconds)
// once it is closing. A failed write ends the socket: the connection is
// cut and no writer starts again.
func (k *socket) writeLoop() {
	for {
		if k.writeQueued() != nil {
			_ = k.conn.CloseNow()
			k.mu.Lock()
			k.closing = true // later offers are discarded, Close does nothing
			k.queue.Discard()
			k.mu.Unlock()
			k.finish()
			return
		}
		k.mu.Lock()
		msgs, _ := k.queue.Len()
		switch {
		case msgs > 0: // offered after the last Pop
			k.mu.Unlock()
			continue
		case !k.closing:
			k.running = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		// Closing: nothing is queued (a flushing close wrote it all, the
		// others discarded it), and nothing more can be.
		_ = k.conn.Close(k.code, k.reason)
		k.finish()
		return
	}
}

// finish releases the timers and marks the socket done.
func (k *socket) finish() {
	k.stopKill()
	close(k.done)
}

// writeQueued writes queued frames, oldest first, until the queue is
// empty (Close without flush discards the queue, so the loop then ends
// after the frame in flight). Each frame's bytes are released as the
// writer takes it.
func (k *socket) writeQueued() error {
	for {
		f, ok, more := k.queue.PopMore()
		if !ok {
			return nil
		}
		if err := k.write(f); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// stopKill releases the kill timer and the write watchdog.
func (k *socket) stopKill() {
	k.mu.Lock()
	if k.kill != nil {
		k.kill.Stop()
	}
	k.mu.Unlock()
	k.wd.Stop()
}

// write writes one frame bounded by writeTimeout through the socket's
// frame.Watchdog: no context with a deadline, no lock and no timer reset
// per frame (RATIONALE.md, "Why is a relay socket's write watchdog armed
// only when it is quiet, not reset per write?", and "Why do the relay and
// /channel share one write watchdog, armed only when quiet?"). A write
// after the cut (closeNow, the kill grace, an overrun) is refused with
// frame.ErrWriteCut.
func (k *socket) write(f []byte) error {
	if !k.wd.Begin(time.Now().Add(writeTimeout)) {
		return frame.ErrWriteCut
	}
	err := k.conn.Write(context.Background(), websocket.MessageText, f)
	k.wd.End()
	return err
}

// cutWrites is the kill: no write begins after it, and one in flight is
// cut (a close handshake already under way is left to the library's own
// bound, as before).
func (k *socket) cutWrites() { k.wd.Cut() }

// readFrame reads one message with the sockets' one bounded reader: a
// binary frame or one over max bytes is discarded as it streams in, never
// buffered whole, and reported as such so the contract refuses it; the
// connection survives.
func (k *socket) readFrame(max int) (contract.Frame, error) {
	data, err := frame.Read(k.conn, int64(max))
	switch {
	case errors.Is(err, frame.ErrBinary):
		return contract.Frame{Binary: true}, nil
	case errors.Is(err, frame.ErrTooLarge):
		return contract.Frame{Oversize: true}, nil
	case err != nil:
		return contract.Frame{}, err
	}
	return contract.Frame{Data: data}, nil
}
