package channel

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/executors/wire"
)

// maxFrameBytes bounds one frame from an authenticated peer (see
// wire.MaxPeerFrameBytes). A larger frame is discarded as it streams in,
// never buffered whole.
const maxFrameBytes = wire.MaxPeerFrameBytes

// identity is who an authenticated connection is.
type identity struct {
	kind   Kind
	name   string         // pairing name; empty for the page
	digest pairing.Digest // the bearer's digest; zero for the page
	// sessionEnded closes when the session whose view cookie admitted
	// the page ends; nil for an environment, or a page admitted on its
	// Origin alone (channel.loopback_auth off).
	sessionEnded <-chan struct{}
}

// executor is the identity's executor label: page or machine:<name>.
func (id identity) executor() string {
	if id.kind == Page {
		return "page"
	}
	return "machine:" + id.name
}

// peer is one authenticated connection: the Link of its remote.
type peer struct {
	identity
	slot   *slot  // where calls find it; set before it is published
	serial uint64 // which connection of the channel it is, from 1; set before it is published
	conn   *websocket.Conn
	out    *link.Writer // every frame to the peer
	remote *Remote
	act    link.Activity // bytes arriving, for the keepalive
	gone   atomic.Bool
	leave  sync.Once
}

// Connected reports whether the connection is still the peer's.
func (p *peer) Connected() bool { return !p.gone.Load() }

// Take waits for the turn to write (link.Writer.Take).
func (p *peer) Take(stop <-chan struct{}, expired <-chan time.Time) bool {
	return p.out.Take(stop, expired)
}

// Send writes one text frame with the turn Take gave.
func (p *peer) Send(frame []byte, deadline time.Time) error {
	return p.out.WriteTaken(frame, deadline)
}
