package connlimit

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// BoundBody gives each request's body d to arrive, counted from when its
// handler starts (net/http has just read the headers), and marks the
// connection evictable while the body is arriving.
//
// It sets a read deadline on the connection for that request only and
// clears it when the body ends, rather than using http.Server.ReadTimeout:
// that deadline would stay set while the handler runs, and net/http's
// background read (which watches for the client going away once the body
// is read) would then cancel a long tool call's context when it expires.
// Requests without a body (every WebSocket upgrade among them) get no
// deadline; net/http clears deadlines on hijack in any case.
//
// BoundBody must see requests first, before any handler that might read
// the body, and the server must use the Limiter's ConnContext.
func (l *Limiter) BoundBody(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := connOf(r)
		if c == nil || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(d))
		l.move(c, phaseHandler, phaseBody)
		r.Body = &boundBody{ReadCloser: r.Body, ended: func() {
			_ = c.SetReadDeadline(time.Time{})
			l.move(c, phaseBody, phaseHandler)
		}}
		next.ServeHTTP(w, r)
	})
}

// boundBody calls ended once, when the body has been read to its end. A
// body that fails (the deadline passed, the client left) keeps its
// deadline and its evictable phase: the connection is finished.
type boundBody struct {
	io.ReadCloser
	ended func()
	once  sync.Once
}

func (b *boundBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.ended)
	}
	return n, err
}
