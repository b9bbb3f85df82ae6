package channel

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/executors/wire"
)

// maxFrameBytes bounds one frame from an authenticated peer: the largest
// observation a descriptor may declare, plus room for the envelope. A
// larger frame is discarded as it streams in, never buffered whole.
const maxFrameBytes = wire.MaxOutputBytes + 1<<20

// Keepalive: an authenticated peer is pinged this often and cut off when
// the pong does not come back in time, so a connection that died without
// a close (a crashed machine, a pulled cable) settles its calls closed
// rather than leaving the executor "connected" to nobody.
const (
	pingEvery   = 15 * time.Second
	pingTimeout = 10 * time.Second
)

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

// peer is one authenticated connection: the Link of its door.
type peer struct {
	identity
	slot  *slot // where calls find it; set before it is published
	conn  *websocket.Conn
	door  *Door
	gone  atomic.Bool
	leave sync.Once
}

// Connected reports whether the connection is still the peer's.
func (p *peer) Connected() bool { return !p.gone.Load() }

// Send writes one text frame. The library serializes concurrent writers.
func (p *peer) Send(ctx context.Context, frame []byte) error {
	return p.conn.Write(ctx, websocket.MessageText, frame)
}

// errFrameDiscarded marks a frame that was binary or over its bound: it
// was read to its end and dropped, and the connection goes on.
var errFrameDiscarded = errors.New("channel: frame discarded")

// readFrame reads one text message of at most limit bytes. Anything else
// is drained without being kept and reported as errFrameDiscarded.
func readFrame(conn *websocket.Conn, limit int64) ([]byte, error) {
	typ, r, err := conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		_, err = io.Copy(io.Discard, r)
		return nil, errors.Join(errFrameDiscarded, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		_, err = io.Copy(io.Discard, r)
		return nil, errors.Join(errFrameDiscarded, err)
	}
	return data, nil
}

// Keepalive pings the other end of conn every 15 s until ctx ends; a pong
// missing for 10 s closes the connection at once, which ends its read
// loop. Both ends of the channel run it, so either notices a peer that
// vanished without a close.
func Keepalive(ctx context.Context, conn *websocket.Conn) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			_ = conn.CloseNow()
			return
		}
	}
}
