// Package rtt is the transport floor of a paired-environment call: one
// bare coder/websocket round trip on an established loopback connection,
// a frame the size of the call out and one the size of its answer back,
// with no Airlock code on either end. BenchmarkCalls in broker/channel
// and `airlock load calls --paired-descriptor` both measure a channel
// call against "local call + this round trip" (the performance target
// is at most 1.5 times that).
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
	"time"

	"github.com/coder/websocket"
)

// MaxFrame bounds a frame either end reads: the largest call or answer
// the channel carries (64 MiB of output) with room for its envelope.
const MaxFrame = 65 << 20

// readHeaderTimeout bounds the wait for an upgrade request's header, so
// a local process that connects and sends nothing does not hold a
// connection on the echo for the rest of the run.
const readHeaderTimeout = 10 * time.Second

// ErrClosed is a round trip on a floor whose connection has ended.
var ErrClosed = errors.New("rtt: the connection is closed")

// Echo is the floor's far end: a loopback coder/websocket server that
// answers every message with one frame of a fixed size, on one
// connection only (another local process that dials it gets 403, so
// Close never waits on a stranger's). `airlock load calls
// --paired-descriptor` runs it in a process of its own (the hidden
// `airlock load rtt-echo`), since the environment it stands beside is
// one; BenchmarkCalls, whose environment shares the broker's process,
// runs it in-process (New).
type Echo struct {
	srv     *http.Server
	addr    string        // the server's host:port
	served  chan struct{} // closed when the server's Serve returns
	handled chan struct{} // closed when the server's one connection ends
	taken   atomic.Bool   // the server has accepted its one connection
	stop    context.CancelFunc
}

// NewEcho starts an echo whose answers are answerSize bytes (a JSON
// string; at least 2). guard, when set, wraps its handler: `airlock load
// rtt-echo` admits only the load run that started it.
func NewEcho(answerSize int, guard func(http.Handler) http.Handler) (*Echo, error) {
	if answerSize > MaxFrame {
		return nil, fmt.Errorf("rtt: an answer of %d bytes is over %d", answerSize, MaxFrame)
	}
	reply := []byte(`"` + strings.Repeat("a", max(answerSize-2, 0)) + `"`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	e := &Echo{addr: ln.Addr().String(), served: make(chan struct{}), handled: make(chan struct{}), stop: stop}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.taken.CompareAndSwap(false, true) {
			http.Error(w, "taken", http.StatusForbidden)
			return
		}
		defer close(e.handled)
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(MaxFrame)
		for {
			if _, _, err := conn.Read(ctx); err != nil {
				return
			}
			if err := conn.Write(ctx, websocket.MessageText, reply); err != nil {
				return
			}
		}
	})
	if guard != nil {
		h = guard(h)
	}
	e.srv = &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
	go func() { defer close(e.served); _ = e.srv.Serve(ln) }()
	return e, nil
}

// URL is where the echo listens, http://HOST:PORT.
func (e *Echo) URL() string { return "http://" + e.addr }

// Close ends the echo's connection and server, and waits for their
// goroutines.
func (e *Echo) Close() {
	e.stop()
	_ = e.srv.Close()
	<-e.served
	if e.taken.Load() {
		<-e.handled
	}
}

// Floor is one client connection to an Echo. Round trips may be in
// flight concurrently on the one connection, as a channel's calls are;
// the echo answers in order, so the client's reader hands each answer to
// the oldest waiter.
type Floor struct {
	echo    *Echo // the in-process echo New started; nil after Dial
	conn    *websocket.Conn
	mu      sync.Mutex // orders writes with the waiter queue
	waiters []chan struct{}
	done    chan struct{} // closed when the client's reader ends
}

// New starts an echo in this process whose answers are answerSize bytes
// and connects to it.
func New(ctx context.Context, answerSize int) (*Floor, error) {
	e, err := NewEcho(answerSize, nil)
	if err != nil {
		return nil, err
	}
	f, err := Dial(ctx, e.URL(), nil, answerSize)
	if err != nil {
		e.Close()
		return nil, err
	}
	f.echo = e
	return f, nil
}

// Dial connects to the echo at url, whose answers are answerSize bytes,
// with header on the upgrade request (nil for none).
func Dial(ctx context.Context, url string, header http.Header, answerSize int) (*Floor, error) {
	if answerSize > MaxFrame {
		return nil, fmt.Errorf("rtt: an answer of %d bytes is over %d", answerSize, MaxFrame)
	}
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(int64(max(answerSize, 2)))
	f := &Floor{conn: conn, done: make(chan struct{})}
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

// Close ends the connection, and the echo New started, and waits for
// their goroutines.
func (f *Floor) Close() {
	_ = f.conn.CloseNow()
	<-f.done
	if f.echo != nil {
		f.echo.Close()
	}
}
