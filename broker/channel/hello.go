package channel

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/executors/wire"
)

// hello waits, at most channel.hello_bound_ms, for the environment's bearer
// hello. Until it authenticates, the connection may send at most
// wire.MaxHelloBytes: a larger frame is refused without being read on.
//
// The bound is a timer that refuses the connection itself (a close frame
// with 1008 executor-unauthenticated) rather than a read deadline, because
// the library drops a connection whose read context ends without saying
// why.
func (c *Channel) hello(conn *websocket.Conn) verdict {
	conn.SetReadLimit(wire.MaxHelloBytes)
	bound := time.Duration(c.opts.Config.HelloBoundMs) * time.Millisecond
	fired := make(chan struct{})
	timer := time.AfterFunc(bound, func() {
		defer close(fired)
		c.refuse(conn, ReasonUnauthenticated)
	})
	data, err := readHello(conn)
	if !timer.Stop() {
		<-fired
		return verdict{reason: ReasonUnauthenticated, done: true}
	}
	switch {
	case errors.Is(err, errFrameDiscarded):
		return refused(ReasonUnauthenticated)
	case err != nil:
		return verdict{done: true} // the client went away first
	}
	h, err := wire.ParseHello(data)
	if err != nil {
		return refused(ReasonUnauthenticated)
	}
	name, digest, ok := c.pairings().Match(h.Bearer)
	if !ok {
		return refused(ReasonBearerRefused)
	}
	return verdict{id: identity{kind: Machine, name: name, digest: digest}}
}

// readHello reads the first message, keeping at most one byte past the
// bound. A binary or oversized message is not drained: the connection is
// refused, and the close handshake discards the rest within its own bound.
func readHello(conn *websocket.Conn) ([]byte, error) {
	typ, r, err := conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errFrameDiscarded
	}
	data, err := io.ReadAll(io.LimitReader(r, wire.MaxHelloBytes+1))
	if len(data) > wire.MaxHelloBytes {
		return nil, errFrameDiscarded
	}
	return data, err
}
