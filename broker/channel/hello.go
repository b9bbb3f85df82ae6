package channel

import (
	"errors"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/internal/frame"
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
	bound := time.Duration(c.opts.Config.HelloBoundMs) * time.Millisecond
	fired := make(chan struct{})
	timer := time.AfterFunc(bound, func() {
		defer close(fired)
		c.refuse(conn, link.ReasonUnauthenticated)
	})
	data, err := frame.ReadFirst(conn, wire.MaxHelloBytes)
	if !timer.Stop() {
		<-fired
		return verdict{reason: link.ReasonUnauthenticated, done: true}
	}
	switch {
	case errors.Is(err, frame.ErrDiscarded):
		return refused(link.ReasonUnauthenticated)
	case err != nil:
		return verdict{done: true} // the client went away first
	}
	h, err := wire.ParseHello(data)
	if err != nil {
		return refused(link.ReasonUnauthenticated)
	}
	name, digest, ok := c.pairings().Match(h.Bearer)
	if !ok {
		return refused(link.ReasonBearerRefused)
	}
	return verdict{id: identity{kind: Machine, name: name, digest: digest}}
}
