package channel

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/internal/httpx"
)

// verdict is the outcome of authenticating one connection: an identity,
// or the close reason it was refused with. done means the refusal has
// already been carried out (the hello bound fired) or there is nobody
// left to refuse (the client went away first).
type verdict struct {
	id     identity
	reason string
	done   bool
}

func refused(reason string) verdict { return verdict{reason: reason} }

// authenticate applies PROTOCOL section 6, in this order: a request
// without an Origin, or with one Origin of a site that cannot be this
// machine (some WebSocket stacks always send one), must say hello with a
// paired bearer, as an environment does; its cookies and view key are
// never looked at. Otherwise it is a browser page when that Origin is the
// broker's own loopback origin (and, with channel.loopback_auth, on by
// default, it carries the view cookie and view key of a live session
// launched from that Origin), else it is refused at once: any other
// Origin is a page on this machine or a value no browser sends.
func (c *Channel) authenticate(r *http.Request, conn *websocket.Conn) verdict {
	origin, one := httpx.OneOrigin(r)
	if len(r.Header.Values("Origin")) == 0 || (one && httpx.ForeignOrigin(origin)) {
		return c.hello(conn)
	}
	if !one || !httpx.LoopbackOrigin(origin, c.localPort(r)) || !loopbackPeer(r) {
		return refused(link.ReasonUnauthenticated)
	}
	if !c.opts.Config.LoopbackAuth {
		return verdict{id: identity{kind: Page}}
	}
	if c.opts.ViewSession == nil {
		return refused(link.ReasonUnauthenticated)
	}
	ended, ok := c.opts.ViewSession(r)
	if !ok {
		return refused(link.ReasonUnauthenticated)
	}
	return verdict{id: identity{kind: Page, sessionEnded: ended}}
}

// localPort is the port the request arrived on: the broker's own port,
// which a page's loopback Origin must name.
func (c *Channel) localPort(r *http.Request) int {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return a.Port
	}
	if c.opts.Port != nil {
		return c.opts.Port()
	}
	return 0
}

// loopbackPeer reports whether the connection comes from a loopback
// address. The page rule trusts the Origin header because browsers set it;
// a program can write any Origin, so a page must at least be local. This
// matters when the broker listens beyond loopback (with a launch token).
func loopbackPeer(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// refuse closes an unauthenticated connection with 1008 and reason, and
// counts it. The close handshake is bounded by the library (a few
// seconds), after which nothing of the connection is left.
func (c *Channel) refuse(conn *websocket.Conn, reason string) {
	c.m.AuthRefused("channel", reason)
	c.log.Info("channel connection refused", "reason", reason)
	_ = conn.Close(websocket.StatusPolicyViolation, reason)
}
