// Package frametest gives the tests of the packages that read and write
// frames (frame, broker/channel/link) a real WebSocket connection.
package frametest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Pair is a real WebSocket connection: the server's end, read by the
// test, and the client's end, which writes. Both are closed at cleanup.
func Pair(t *testing.T) (server, client *websocket.Conn) {
	t.Helper()
	return PairDial(t, nil)
}

// PairDial is Pair with the client dialled with opts (a ping counter, for
// instance).
func PairDial(t *testing.T, opts *websocket.DialOptions) (server, client *websocket.Conn) {
	t.Helper()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), opts)
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() {
		_ = client.CloseNow()
		_ = server.CloseNow()
	})
	return server, client
}
