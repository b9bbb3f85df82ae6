package link

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// pair is a real WebSocket connection: the server's end, read by the
// test, and the client's end, which writes.
func pair(t *testing.T) (server, client *websocket.Conn) {
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
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
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

func write(t *testing.T, c *websocket.Conn, typ websocket.MessageType, data string) {
	t.Helper()
	go func() { _ = c.Write(context.Background(), typ, []byte(data)) }()
}

// TestReadFrameDropsAndGoesOn: a binary or oversized message is drained
// and reported, and the next message reads normally.
func TestReadFrameDropsAndGoesOn(t *testing.T) {
	server, client := pair(t)
	const limit = 40000 // over the library's default read limit (32 KiB)
	for _, m := range []struct {
		typ  websocket.MessageType
		data string
		want error
	}{
		{websocket.MessageBinary, "{}", ErrFrameBinary},
		{websocket.MessageText, strings.Repeat("x", limit+1), ErrFrameTooLarge},
		{websocket.MessageText, strings.Repeat("y", limit), nil},
		{websocket.MessageText, "{}", nil},
	} {
		write(t, client, m.typ, m.data)
		got, err := ReadFrame(server, limit)
		if !errors.Is(err, m.want) || (err == nil && string(got) != m.data) || (err != nil && !errors.Is(err, ErrFrameDiscarded)) {
			t.Fatalf("%d bytes: got %d bytes, %v; want %v", len(m.data), len(got), err, m.want)
		}
	}
}

// TestReadFirstRefusesBadFirstMessages: a first message that is binary or
// over its bound is reported, not returned.
func TestReadFirstRefusesBadFirstMessages(t *testing.T) {
	for name, typ := range map[string]websocket.MessageType{"binary": websocket.MessageBinary, "oversized": websocket.MessageText} {
		t.Run(name, func(t *testing.T) {
			server, client := pair(t)
			data := strings.Repeat("x", 101)
			if typ == websocket.MessageBinary {
				data = "{}"
			}
			write(t, client, typ, data)
			if _, err := ReadFirst(server, 100); !errors.Is(err, ErrFrameDiscarded) {
				t.Fatalf("got %v", err)
			}
		})
	}
	server, client := pair(t)
	write(t, client, websocket.MessageText, `{"type":"hello"}`)
	if got, err := ReadFirst(server, 100); err != nil || string(got) != `{"type":"hello"}` {
		t.Fatalf("got %q, %v", got, err)
	}
}
