// Package frame bounds the frames of Airlock's WebSocket connections in
// both directions: Read takes one text message of at most a bound and
// survives a bad one, and a Watchdog cuts a connection whose write
// overruns its deadline. Both ends of /channel (broker/channel/link) and
// the broker's /local/ws sockets (broker/session) use them, so they live
// under broker/internal, which both may import, rather than in either
// (RATIONALE.md, "Why do the bounded frame reader and the write watchdog
// live in `broker/internal/frame`?"). It imports only the standard
// library and coder/websocket: an environment (`airlock env`) builds it.
package frame

import (
	"context"
	"io"

	"github.com/coder/websocket"
)

// Read reads the next message of a connection that lives on after a bad
// one: a text message of at most limit bytes. A binary or larger message
// is read to its end without being kept and reported as ErrBinary or
// ErrTooLarge. Read is the bound: it turns the library's own read limit
// off, which would close the connection (1009) instead. It is the one
// bounded frame reader of Airlock's sockets: both ends of /channel and
// the broker's /local/ws use it.
func Read(conn *websocket.Conn, limit int64) ([]byte, error) {
	return ReadNoting(conn, limit, nil)
}

// A Noter is told each time bytes of a frame arrive: a keepalive learns
// from it that a peer busy sending one long frame is still there
// (link.Activity).
type Noter interface{ Note() }

// ReadNoting is Read, telling n (when not nil) of each read that returns
// bytes of the frame.
func ReadNoting(conn *websocket.Conn, limit int64, n Noter) ([]byte, error) {
	conn.SetReadLimit(-1)
	return read(conn, limit, true, n)
}

// ReadFirst reads the message that decides whether a connection is
// accepted at all (an environment's hello): as Read, except that a
// binary or larger message is not drained. The caller refuses the
// connection, and the close handshake discards the rest within its own
// bound, so a peer cannot keep the broker reading for the length of a
// message it was never going to accept.
func ReadFirst(conn *websocket.Conn, limit int64) ([]byte, error) {
	conn.SetReadLimit(limit) // a backstop: the library allows limit+1 bytes, all read ever asks for
	return read(conn, limit, false, nil)
}

// read reads one text message, keeping at most one byte past limit, and
// tells n (when not nil) as its bytes arrive.
func read(conn *websocket.Conn, limit int64, drain bool, n Noter) ([]byte, error) {
	typ, r, err := conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	if n != nil {
		r = noting{r, n}
	}
	if typ != websocket.MessageText {
		return nil, discard(r, drain, ErrBinary)
	}
	data, err := readAtMost(r, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, discard(r, drain, ErrTooLarge)
	}
	return data, nil
}

// noting wraps a message reader so that each read that returns bytes
// tells n.
type noting struct {
	r io.Reader
	n Noter
}

func (n noting) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if k > 0 {
		n.n.Note()
	}
	return k, err
}

// readAtMost reads r to its end, keeping at most max (at least 1) bytes:
// io.ReadAll of an io.LimitReader, without the LimitedReader's allocation
// on every frame.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	b := make([]byte, 0, min(512, max))
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the growth
		}
		room := b[len(b):cap(b)]
		if left := max - int64(len(b)); int64(len(room)) > left {
			room = room[:left]
		}
		n, err := r.Read(room)
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case int64(len(b)) >= max:
			return b, nil
		}
	}
}

// discard drops what is left of a message, when asked to, and returns
// why. A connection that fails while it is drained reports that failure
// instead: it does not go on.
func discard(r io.Reader, drain bool, why error) error {
	if !drain {
		return why
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	return why
}
