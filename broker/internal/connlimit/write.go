package connlimit

import (
	"net/http"
	"time"
)

// BoundWrites gives each write of a response d to reach the client,
// extended on every write, and marks the connection evictable while a
// write is under way: a client that never reads its responses is waiting
// only on itself, and must not hold a slot under the cap.
//
// A deadline per write rather than http.Server.WriteTimeout: that one is
// counted from the request's headers, so it would end a long tool call's
// response. A handler that has not started writing is not bound. A fresh
// deadline and the evictable phase also cover net/http's final flush
// after the handler returns. Hijacked connections are left alone:
// net/http clears their deadlines, and the WebSocket owns them.
//
// The server must use the Limiter's ConnContext.
func (l *Limiter) BoundWrites(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := connOf(r)
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		// A keep-alive connection may carry the last request's deadline.
		_ = c.SetWriteDeadline(time.Time{})
		bw := &boundWriter{ResponseWriter: w, l: l, c: c, d: d}
		next.ServeHTTP(bw, r)
		// What the handler left in net/http's buffer is flushed after it
		// returns, under this deadline; until net/http reports the
		// connection idle, that flush is a write like any other.
		bw.arm()
		l.move(c, phaseHandler, phaseWriting)
	})
}

// boundWriter arms the write deadline before each write. Unwrap lets
// http.ResponseController and the WebSocket upgrade reach the connection.
type boundWriter struct {
	http.ResponseWriter
	l *Limiter
	c *conn
	d time.Duration
}

func (b *boundWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// arm sets the deadline unless a WebSocket has taken the connection.
func (b *boundWriter) arm() {
	b.l.mu.Lock()
	hijacked := b.c.phase.hijacked()
	b.l.mu.Unlock()
	if !hijacked {
		_ = b.c.SetWriteDeadline(time.Now().Add(b.d))
	}
}

// writing runs a write with the deadline armed and the connection
// evictable while it lasts.
func (b *boundWriter) writing(f func()) {
	b.arm()
	b.l.move(b.c, phaseHandler, phaseWriting)
	defer b.l.move(b.c, phaseWriting, phaseHandler)
	f()
}

func (b *boundWriter) Write(p []byte) (n int, err error) {
	b.writing(func() { n, err = b.ResponseWriter.Write(p) })
	return n, err
}

func (b *boundWriter) WriteHeader(code int) {
	b.writing(func() { b.ResponseWriter.WriteHeader(code) })
}

// Flush implements http.Flusher for handlers that stream.
func (b *boundWriter) Flush() { _ = b.FlushError() }

// FlushError is what http.ResponseController calls.
func (b *boundWriter) FlushError() (err error) {
	b.writing(func() { err = http.NewResponseController(b.ResponseWriter).Flush() })
	return err
}
