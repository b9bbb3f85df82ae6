// Package baseline is a bare coder/websocket forwarder with nothing of
// Airlock: the yardstick for relay figures. The session benchmarks and
// `airlock load relay` drive it with the same workload as the broker's
// /local/ws, in the same run, so a figure is a ratio to what relaying
// over coder/websocket costs anyway.
//
// It accepts every upgrade (past the Guard its caller may set), treats the socket whose Origin header is
// HostOrigin as the host, and queues every host message to each view's
// own writer goroutine. No validation, no handshake, no ordering check, no
// metrics: a full view queue drops the message silently. The one piece of
// routing is the room, the request path, so one forwarder can stand in
// for several sessions (a single path is a single room).
//
// It lives beside the relay, not inside it, so that broker/relay keeps
// knowing nothing of sockets and never imports its own yardstick.
package baseline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// HostOrigin is the Origin header that marks the host's socket.
const HostOrigin = "host"

// viewQueue is each view's outbound queue, the broker's default
// local.outbound_queue.
const viewQueue = 256

// Forwarder is a running bare forwarder on a loopback port.
type Forwarder struct {
	srv        *http.Server
	ln         net.Listener
	served     chan struct{}
	maxMessage int64
	wg         sync.WaitGroup // running handlers

	mu     sync.Mutex
	rooms  map[string]map[chan []byte]struct{}
	conns  map[*websocket.Conn]struct{}
	views  int
	closed bool
}

// DefaultMaxMessage is the read limit of Options{}: the most a
// localclient reads, so nothing a client could receive is cut.
const DefaultMaxMessage = 64 << 20

// The server's timeouts: a local process that connects and sends no
// upgrade, or keeps an answered connection open, does not hold it for
// the rest of the run. Upgraded sockets are not under either.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 10 * time.Second
)

// Options configure a Forwarder.
type Options struct {
	// MaxMessage bounds a message read from any socket: a bigger one
	// closes that socket (1009, message too big) before it is buffered. 0
	// is DefaultMaxMessage.
	MaxMessage int64
	// Guard, when set, wraps the handler: `airlock load forwarder` admits
	// only the load run that started it.
	Guard func(http.Handler) http.Handler
}

// Start listens on a free loopback port and serves until Close.
func Start(o Options) (*Forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("baseline: forwarder: %w", err)
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	f := &Forwarder{ln: ln, served: make(chan struct{}), maxMessage: o.MaxMessage,
		rooms: map[string]map[chan []byte]struct{}{}, conns: map[*websocket.Conn]struct{}{}}
	var h http.Handler = http.HandlerFunc(f.serve)
	if o.Guard != nil {
		h = o.Guard(h)
	}
	f.srv = &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout}
	go func() { defer close(f.served); _ = f.srv.Serve(ln) }()
	return f, nil
}

// URL is the forwarder's base URL, http://127.0.0.1:PORT. Any path is a
// room; a client appends its own.
func (f *Forwarder) URL() string { return "http://" + f.ln.Addr().String() }

// Views is how many views are connected and registered.
func (f *Forwarder) Views() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.views
}

// Close stops listening, drops every socket and waits for their
// goroutines.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	f.closed = true
	conns := f.conns
	f.conns = map[*websocket.Conn]struct{}{}
	f.mu.Unlock()
	err := f.srv.Close()
	<-f.served
	for c := range conns {
		_ = c.CloseNow()
	}
	f.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("baseline: forwarder close: %w", err)
	}
	return nil
}

func (f *Forwarder) serve(w http.ResponseWriter, r *http.Request) {
	if !f.enter() {
		return
	}
	defer f.wg.Done()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	if !f.track(c) {
		_ = c.CloseNow()
		return
	}
	defer f.untrack(c)
	c.SetReadLimit(f.maxMessage)
	if r.Header.Get("Origin") == HostOrigin {
		f.host(c, r.URL.Path)
		return
	}
	f.view(c, r.URL.Path)
}

// enter counts a handler in, so Close can wait for it; false once
// closed. The count is taken under the lock that Close sets closed with,
// so no handler starts after Close began waiting.
func (f *Forwarder) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.wg.Add(1)
	return true
}

// track records c so Close can drop it; false once closed.
func (f *Forwarder) track(c *websocket.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c *websocket.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.CloseNow()
}

// host reads every message and offers it to each view of the room.
func (f *Forwarder) host(c *websocket.Conn, room string) {
	ctx := context.Background()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		f.mu.Lock()
		for q := range f.rooms[room] {
			select {
			case q <- data:
			default:
			}
		}
		f.mu.Unlock()
	}
}

// view writes its queue to the socket until the client leaves.
func (f *Forwarder) view(c *websocket.Conn, room string) {
	q := make(chan []byte, viewQueue)
	f.join(room, q)
	defer f.leave(room, q)
	ctx := context.Background()
	readDone := c.CloseRead(ctx)
	for {
		select {
		case data := <-q:
			if c.Write(ctx, websocket.MessageText, data) != nil {
				return
			}
		case <-readDone.Done():
			return
		}
	}
}

func (f *Forwarder) join(room string, q chan []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rooms[room] == nil {
		f.rooms[room] = map[chan []byte]struct{}{}
	}
	f.rooms[room][q] = struct{}{}
	f.views++
}

func (f *Forwarder) leave(room string, q chan []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rooms[room], q)
	if len(f.rooms[room]) == 0 {
		delete(f.rooms, room)
	}
	f.views--
}
