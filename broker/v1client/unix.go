package v1client

import (
	"context"
	"net"
	"net/http"
)

// UnixBase is the Base of a Client over the broker's Unix socket: the
// socket has no port, and the broker wants Host: localhost on it.
const UnixBase = "http://localhost"

// UnixPrefix starts the name of a Unix socket where a URL would stand:
// unix:PATH (Where, and --broker unix:PATH).
const UnixPrefix = "unix:"

// Where names the broker for people: its URL, or unix:PATH over its
// socket.
func (c *Client) Where() string {
	if c.Socket != "" {
		return UnixPrefix + c.Socket
	}
	return c.Base
}

// UnixTransport dials the broker's Unix socket at path for every request,
// whatever the URL's host; keep-alive connections are pooled as over TCP.
func UnixTransport(path string) *http.Transport {
	var d net.Dialer
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 64,
	}
}
