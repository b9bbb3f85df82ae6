package link

import (
	"context"
	"time"

	"github.com/coder/websocket"
)

// Keepalive timing: an authenticated connection is pinged this often and
// cut off when the pong does not come back in time, so a connection that
// died without a close (a crashed machine, a pulled cable) settles its
// calls closed rather than leaving the executor "connected" to nobody.
const (
	pingEvery   = 15 * time.Second
	pingTimeout = 10 * time.Second
)

// Keepalive pings the other end of conn every 15 s until ctx ends; a pong
// missing for 10 s closes the connection at once, which ends its read
// loop. Both ends of the channel run it, so either notices a peer that
// vanished without a close. A pong is only read while someone reads conn.
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
