// Package rtt is the transport floor of a paired-environment call: one
// bare coder/websocket round trip on an established loopback connection,
// a frame the size of the call out and one the size of its answer back,
// with no Airlock code on either end. BenchmarkCalls in broker/channel
// and `airlock load calls --paired-descriptor` both measure a channel
// call against "local call + this round trip" (issue 13's target is at
// most 1.5 times that).
package rtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// MaxFrame bounds a frame either end reads: the largest call or answer
// the channel carries (64 MiB of output) with room for its envelope.
const MaxFrame = 65 << 20

// ErrClosed is a round trip on a floor whose connection has ended.
var ErrClosed = errors.New("rtt: the connection is closed")

// Floor is a loopback coder/websocket server that answers every message
// with one frame of a fixed size, and one client connection to it. Round
// trips may be in flight concurrently on the one connection, as a
// channel's calls are; the server answers in order, so the client's
// reader hands each answer to the oldest waiter.
type Floor struct {
	srv     *http.Server
	addr    string        // the server's host:port
	served  chan struct{} // closed when the server's Serve returns
	handled chan struct{} // closed when the server's one connection ends
	taken   atomic.Bool   // the server has accepted its one connection
	conn    *websocket.Conn
	mu      sync.Mutex // orders writes with the waiter queue
	waiters []chan struct{}
	done    chan struct{} // closed when the client's reader ends
}

// New starts a floor whose answers are answerSize bytes (a JSON string;
// at least 2).
func New(ctx context.Context, answerSize int) (*Floor, error) {
	if answerSize > MaxFrame {
		return nil, fmt.Errorf("rtt: an answer of %d bytes is over %d", answerSize, MaxFrame)
	}
	reply := []byte(`"` + strings.Repeat("a", max(answerSize-2, 0)) + `"`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Floor{addr: ln.Addr().String(), done: make(chan struct{}), served: make(chan struct{}), handled: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// One connection only, the floor's own: another local process
		// that dials the port gets 403, so Close never waits on it.
		if !f.taken.CompareAndSwap(false, true) {
			http.Error(w, "taken", http.StatusForbidden)
			return
		}
		defer close(f.handled)
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(MaxFrame)
		for {
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
			if err := conn.Write(context.Background(), websocket.MessageText, reply); err != nil {
				return
			}
		}
	})}
	go func() { defer close(f.served); _ = f.srv.Serve(ln) }()
	conn, _, err := websocket.Dial(ctx, "ws://"+f.addr, nil)
	if err != nil {
		_ = f.srv.Close()
		<-f.served
		if f.taken.Load() {
			<-f.handled
		}
		return nil, err
	}
	conn.SetReadLimit(int64(len(reply)))
	f.conn = conn
	go f.read()
	return f, nil
}

// read hands each answer to the oldest waiter until the connection ends.
func (f *Floor) read() {
	defer close(f.done)
	for {
		if _, _, err := f.conn.Read(context.Background()); err != nil {
			return
		}
		f.mu.Lock()
		if len(f.waiters) == 0 {
			f.mu.Unlock()
			continue // an answer to a round trip whose write failed
		}
		w := f.waiters[0]
		f.waiters = f.waiters[1:]
		f.mu.Unlock()
		w <- struct{}{}
	}
}

// RoundTrip sends frame and waits for the answer to it, or for ctx or
// the connection to end.
func (f *Floor) RoundTrip(ctx context.Context, frame []byte) error {
	w := make(chan struct{}, 1)
	f.mu.Lock()
	f.waiters = append(f.waiters, w)
	err := f.conn.Write(ctx, websocket.MessageText, frame)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-w:
		return nil
	case <-f.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the connection and the server, and waits for their
// goroutines.
func (f *Floor) Close() {
	_ = f.conn.CloseNow()
	<-f.done
	_ = f.srv.Close()
	<-f.served
	<-f.handled
}
