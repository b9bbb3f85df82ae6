package connlimit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
)

// Bounds of a refusal. A refused connection is answered at once, then
// half-closed and drained for a moment before it is closed: closing a
// socket with unread request bytes makes the kernel send a reset, which
// can destroy the 503 before the client reads it (net/http lingers the
// same way). Lingering connections are bounded in number and time; past
// maxLingering a refusal closes at once.
const (
	refusalWriteBound = time.Second
	lingerBound       = time.Second
	lingerBytes       = 64 << 10
	maxLingering      = 64
)

// refusal is the whole response to a connection past the cap: the
// section 1 error body with Connection: close.
var refusal = func() []byte {
	body := httpx.ErrorBody(contract.Unavailable)
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable), len(body), body)
}()

// Listener wraps ln so that every connection it accepts is counted under
// the cap, and connections past it are refused.
func (l *Limiter) Listener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, l: l, lingering: map[net.Conn]struct{}{}}
}

type listener struct {
	net.Listener
	l *Limiter

	mu        sync.Mutex
	closed    bool
	lingering map[net.Conn]struct{}
	wg        sync.WaitGroup
}

// Accept returns the next admitted connection; refused ones are answered
// and never reach the server.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		nc, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := ln.l.admit(nc); c != nil {
			return c, nil
		}
		ln.refuse(nc)
	}
}

// refuse answers nc 503 and closes it, lingering when it can. The write
// goes into an empty socket buffer and is bounded besides.
func (ln *listener) refuse(nc net.Conn) {
	ln.l.refused.Inc()
	_ = nc.SetWriteDeadline(time.Now().Add(refusalWriteBound))
	_, _ = nc.Write(refusal)
	if !ln.startLinger(nc) {
		_ = nc.Close()
	}
}

func (ln *listener) startLinger(nc net.Conn) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.closed || len(ln.lingering) >= maxLingering {
		return false
	}
	ln.lingering[nc] = struct{}{}
	ln.wg.Add(1)
	go ln.linger(nc)
	return true
}

// linger half-closes nc, reads what the client sent until it closes or
// the bound passes, then closes.
func (ln *listener) linger(nc net.Conn) {
	defer ln.wg.Done()
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(lingerBound))
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, lingerBytes))
	ln.mu.Lock()
	delete(ln.lingering, nc)
	ln.mu.Unlock()
	_ = nc.Close()
}

// Close stops accepting, ends lingering refusals and waits for them.
func (ln *listener) Close() error {
	err := ln.Listener.Close()
	ln.mu.Lock()
	ln.closed = true
	for nc := range ln.lingering {
		_ = nc.Close()
	}
	ln.mu.Unlock()
	ln.wg.Wait()
	return err
}
