package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// world is an http.Server behind a Limiter, with routes that hold a
// connection in each phase: /block stays in its handler until release is
// closed, /hijack takes the connection over, /ok answers, /read reads the
// body and reports whether its context outlived the body bound.
type world struct {
	t       *testing.T
	l       *Limiter
	reg     *metrics.Registry
	addr    string
	release chan struct{}
	inside  chan struct{} // one value per request that reached /block
	mu      sync.Mutex
	hijack  []net.Conn
}

func newWorld(t *testing.T, max int, body time.Duration) *world {
	t.Helper()
	return newWorldWrites(t, max, body, time.Minute)
}

// newWorldWrites is newWorld with a bound on response writes; /big
// answers more than socket buffers hold.
func newWorldWrites(t *testing.T, max int, body, write time.Duration) *world {
	t.Helper()
	w := &world{t: t, reg: metrics.New(), release: make(chan struct{}), inside: make(chan struct{}, 16)}
	l := New(max, w.reg)
	w.l = l
	mux := http.NewServeMux()
	mux.HandleFunc("/block", func(rw http.ResponseWriter, r *http.Request) {
		w.inside <- struct{}{}
		<-w.release
	})
	mux.HandleFunc("/hijack", func(rw http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		// A pending socket stands for one that never authenticates; the
		// others are established before the client hears of them.
		if !r.URL.Query().Has("pending") {
			Established(r.Context())
		}
		w.mu.Lock()
		w.hijack = append(w.hijack, c)
		w.mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
	})
	mux.HandleFunc("/big", func(rw http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for range 256 {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/ok", func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "ok") })
	mux.HandleFunc("/read", func(rw http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		// Wait past the bound: the deadline set for the body must be gone,
		// or net/http's background read would cancel the context.
		select {
		case <-time.After(3 * body):
			io.WriteString(rw, "alive")
		case <-r.Context().Done():
			io.WriteString(rw, "cancelled")
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.addr = ln.Addr().String()
	srv := &http.Server{Handler: l.BoundBody(body, l.BoundWrites(write, mux)), ConnState: l.ConnState, ConnContext: l.ConnContext, ReadHeaderTimeout: time.Minute}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(l.Listener(ln)) }()
	t.Cleanup(func() {
		select {
		case <-w.release:
		default:
			close(w.release)
		}
		_ = srv.Close()
		<-served
		w.mu.Lock()
		for _, c := range w.hijack {
			c.Close()
		}
		w.mu.Unlock()
	})
	return w
}

// client is a raw connection; its reader collects what the server sends
// until the server closes it.
type client struct {
	c  net.Conn
	br *bufio.Reader
}

func (w *world) dial(request string) *client {
	w.t.Helper()
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	if request != "" {
		if _, err := io.WriteString(c, request); err != nil {
			w.t.Fatal(err)
		}
	}
	return &client{c: c, br: bufio.NewReader(c)}
}

func get(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }

// response reads one response.
func (c *client) response(t *testing.T) (*http.Response, string) {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// waitClosed fails unless the server closes the connection.
func (c *client) waitClosed(t *testing.T, what string) {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, c.br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: the server never closed the connection", what)
	}
}

// waitOpen polls the open-connections gauge until it reads n.
func (w *world) waitOpen(n float64) {
	w.t.Helper()
	testkit.Eventually(w.t, fmt.Sprintf("%v open connections", n), func() bool {
		return testutil.ToFloat64(w.reg.ConnectionsOpen) == n
	})
}

func TestCapEvictsWaitingConnectionsThenRefuses(t *testing.T) {
	w := newWorld(t, 3, time.Minute)
	silent := w.dial("")
	w.waitOpen(1)
	busy := w.dial(get("/block"))
	<-w.inside
	socket := w.dial(get("/hijack"))
	if resp, _ := socket.response(t); resp.StatusCode != 101 {
		t.Fatalf("hijack answered %d", resp.StatusCode)
	}
	w.waitOpen(3)

	// The cap is full: the silent connection makes room for the next one.
	fresh := w.dial(get("/ok"))
	if resp, body := fresh.response(t); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("a new connection with a waiting one to evict: %d %q", resp.StatusCode, body)
	}
	silent.waitClosed(t, "the silent connection")
	if n := testutil.ToFloat64(w.reg.ConnectionsEvicted.WithLabelValues("headers")); n != 1 {
		t.Errorf("evicted while sending headers: %v, want 1", n)
	}
	// fresh is now idle on keep-alive: the next one evicts it.
	w.waitPhase(phaseIdle, 1)
	next := w.dial(get("/ok"))
	if resp, _ := next.response(t); resp.StatusCode != 200 {
		t.Fatalf("second new connection: %d", resp.StatusCode)
	}
	fresh.waitClosed(t, "the idle keep-alive connection")

	// Now the cap holds a handler, a hijacked socket and next (idle). Make
	// next busy too: nothing is left to evict, and a new connection is
	// refused cleanly, its request sent before the refusal notwithstanding.
	if _, err := io.WriteString(next.c, get("/block")); err != nil {
		t.Fatal(err)
	}
	<-w.inside
	refused := w.dial(get("/ok"))
	resp, body := refused.response(t)
	if resp.StatusCode != 503 || !resp.Close || resp.Header.Get("Content-Type") != "application/json" ||
		body != `{"error":{"code":"UNAVAILABLE","message":"the broker cannot take this request now"}}`+"\n" {
		t.Errorf("past the cap: %d close=%v %v %q", resp.StatusCode, resp.Close, resp.Header, body)
	}
	refused.waitClosed(t, "the refused connection")
	if n := testutil.ToFloat64(w.reg.ConnectionsRefused); n != 1 {
		t.Errorf("refused %v, want 1", n)
	}
	if n := testutil.ToFloat64(w.reg.ConnectionsOpen); n != 3 {
		t.Errorf("open %v, want 3", n)
	}

	// The handler and the socket were never touched: both still work.
	close(w.release)
	if resp, _ := busy.response(t); resp.StatusCode != 200 {
		t.Errorf("the busy request: %d", resp.StatusCode)
	}
	if _, err := io.WriteString(socket.c, "ping"); err != nil {
		t.Errorf("the hijacked socket was closed: %v", err)
	}
	w.mu.Lock()
	hj := w.hijack[0]
	w.mu.Unlock()
	buf := make([]byte, 4)
	_ = hj.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(hj, buf); err != nil || string(buf) != "ping" {
		t.Errorf("the hijacked socket does not carry data: %q %v", buf, err)
	}
	// Closing the hijacked connection frees its slot.
	hj.Close()
	w.waitOpen(2)
}

func TestBodyMustArriveInTimeButHandlersMayRunLonger(t *testing.T) {
	const bound = 300 * time.Millisecond
	w := newWorld(t, 8, bound)
	slow := w.dial("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
	resp, _ := slow.response(t)
	if resp.StatusCode != 400 {
		t.Errorf("a body that never ends: %d, want the handler's 400", resp.StatusCode)
	}
	slow.waitClosed(t, "the slow body")

	fast := w.dial("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab")
	resp, body := fast.response(t)
	if resp.StatusCode != 200 || body != "alive" {
		t.Errorf("a handler running past the bound after its body: %d %q", resp.StatusCode, body)
	}
	// The same connection serves another request without a body.
	if _, err := io.WriteString(fast.c, get("/ok")); err != nil {
		t.Fatal(err)
	}
	if resp, body := fast.response(t); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("keep-alive after a bound body: %d %q", resp.StatusCode, body)
	}
}

func TestEvictsBodyInFlight(t *testing.T) {
	w := newWorld(t, 1, time.Minute)
	dripping := w.dial("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
	w.waitOpen(1)
	// Wait until the request is inside BoundBody, reading its body.
	testkit.Eventually(t, "the request to reach its body", func() bool { return w.phaseIs(phaseBody) })
	fresh := w.dial(get("/ok"))
	if resp, _ := fresh.response(t); resp.StatusCode != 200 {
		t.Fatalf("new connection: %d", resp.StatusCode)
	}
	dripping.waitClosed(t, "the body in flight")
	if n := testutil.ToFloat64(w.reg.ConnectionsEvicted.WithLabelValues("body")); n != 1 {
		t.Errorf("evicted while sending a body: %v, want 1", n)
	}
}

// phaseIs reports whether the limiter tracks exactly one connection, in
// phase p.
func (w *world) phaseIs(p phase) bool {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.conns.Len() == 1 && w.l.conns.Front().Value.(*conn).phase == p
}

// TestHammerAccounting races admissions, evictions, refusals and closes
// on a small cap; afterwards every slot must be free again.
func TestHammerAccounting(t *testing.T) {
	w := newWorld(t, 4, time.Minute)
	const workers, rounds = 16, 20
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range rounds {
				c, err := net.Dial("tcp", w.addr)
				if err != nil {
					t.Error(err)
					return
				}
				switch (i + j) % 3 {
				case 0: // a whole request, answered or refused
					_, _ = io.WriteString(c, get("/ok"))
					_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
					if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
						resp.Body.Close()
					}
				case 1: // half a request
					_, _ = io.WriteString(c, "GET /ok HTTP/1.1\r\nHo")
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	w.waitOpen(0)
	w.l.mu.Lock()
	n := w.l.conns.Len()
	w.l.mu.Unlock()
	if n != 0 {
		t.Errorf("%d connections still tracked", n)
	}
}

// phaseCount is how many tracked connections are in phase p.
func (w *world) phaseCount(p phase) int {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	n := 0
	for e := w.l.conns.Front(); e != nil; e = e.Next() {
		if e.Value.(*conn).phase == p {
			n++
		}
	}
	return n
}

// waitPhase polls until n tracked connections are in phase p.
func (w *world) waitPhase(p phase, n int) {
	w.t.Helper()
	testkit.Eventually(w.t, fmt.Sprintf("%d connections in phase %d", n, p), func() bool { return w.phaseCount(p) == n })
}

func TestCapEvictsPendingUpgradesNotEstablishedOnes(t *testing.T) {
	w := newWorld(t, 2, time.Minute)
	live := w.dial(get("/hijack"))
	if resp, _ := live.response(t); resp.StatusCode != 101 {
		t.Fatalf("hijack answered %d", resp.StatusCode)
	}
	pending := w.dial(get("/hijack?pending"))
	if resp, _ := pending.response(t); resp.StatusCode != 101 {
		t.Fatalf("pending hijack answered %d", resp.StatusCode)
	}
	w.waitPhase(phaseEstablished, 1)
	w.waitPhase(phaseUpgrade, 1)

	// The cap is full: the pending socket makes room, the established one
	// stays.
	fresh := w.dial(get("/ok"))
	if resp, body := fresh.response(t); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("a new connection with a pending upgrade to evict: %d %q", resp.StatusCode, body)
	}
	pending.waitClosed(t, "the pending upgrade")
	if n := testutil.ToFloat64(w.reg.ConnectionsEvicted.WithLabelValues("upgrade")); n != 1 {
		t.Errorf("evicted pending upgrades: %v, want 1", n)
	}
	if _, err := io.WriteString(live.c, "ping"); err != nil {
		t.Errorf("the established socket was closed: %v", err)
	}
	w.mu.Lock()
	hj := w.hijack[0]
	w.mu.Unlock()
	buf := make([]byte, 4)
	_ = hj.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(hj, buf); err != nil || string(buf) != "ping" {
		t.Errorf("the established socket does not carry data: %q %v", buf, err)
	}
}

func TestCapEvictsClientsThatDoNotRead(t *testing.T) {
	w := newWorld(t, 2, time.Minute)
	deaf := w.dial(get("/big"))
	w.waitPhase(phaseWriting, 1)
	busy := w.dial(get("/block"))
	<-w.inside

	// The cap is full: the write blocked on a client that does not read
	// makes room; the handler that is not writing stays.
	fresh := w.dial(get("/ok"))
	if resp, body := fresh.response(t); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("a new connection with a stalled write to evict: %d %q", resp.StatusCode, body)
	}
	if n := testutil.ToFloat64(w.reg.ConnectionsEvicted.WithLabelValues("writing")); n != 1 {
		t.Errorf("evicted stalled writes: %v, want 1", n)
	}
	_, _ = io.Copy(io.Discard, deaf.c) // ends: the server closed it
	close(w.release)
	if resp, _ := busy.response(t); resp.StatusCode != 200 {
		t.Errorf("the busy request: %d", resp.StatusCode)
	}
}

func TestStalledWriteEndsAtItsBound(t *testing.T) {
	w := newWorldWrites(t, 8, time.Minute, 200*time.Millisecond)
	w.dial(get("/big"))
	w.waitPhase(phaseWriting, 1)
	// Nobody evicts it (the cap has room): the write bound alone ends the
	// response, and the connection with it.
	w.waitOpen(0)
}

// TestReadingClientIsNotCut: the write bound cuts a stalled reader, not a
// reading one: under a bound that no reading client reaches on any
// machine, a client that reads gets the whole response. (Under the 200 ms
// bound above, a reader that a loaded machine starves for 200 ms between
// two writes is cut, and rightly: it made no progress within the bound.)
func TestReadingClientIsNotCut(t *testing.T) {
	w := newWorldWrites(t, 8, time.Minute, time.Minute)
	c := w.dial(get("/big"))
	if resp, body := c.response(t); resp.StatusCode != 200 || len(body) != 256*64<<10 {
		t.Errorf("a reading client: %d, %d bytes", resp.StatusCode, len(body))
	}
}
