package baseline

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/executors/testkit"
)

func dial(t *testing.T, f *Forwarder, room, origin string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, _, err := websocket.Dial(context.Background(), "ws"+f.URL()[len("http"):]+room, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func read(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRooms checks that a host's messages reach every view of its room,
// in order, and no view of another room.
func TestRooms(t *testing.T) {
	f, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a1, a2, b := dial(t, f, "/a", ""), dial(t, f, "/a", ""), dial(t, f, "/b", "")
	testkit.Eventually(t, "three views registered", func() bool { return f.Views() == 3 })
	hostA, hostB := dial(t, f, "/a", HostOrigin), dial(t, f, "/b", HostOrigin)
	ctx := context.Background()
	for _, m := range []string{"one", "two"} {
		if err := hostA.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := hostB.Write(ctx, websocket.MessageText, []byte("b only")); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*websocket.Conn{a1, a2} {
		if got := read(t, v) + "," + read(t, v); got != "one,two" {
			t.Fatalf("room a got %s", got)
		}
	}
	if got := read(t, b); got != "b only" {
		t.Fatalf("room b got %s", got)
	}
}

// TestCloseDropsSockets checks that Close returns with clients still
// connected, and that they see the close.
func TestCloseDropsSockets(t *testing.T) {
	f, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := dial(t, f, "/r", "")
	h := dial(t, f, "/r", HostOrigin)
	testkit.Eventually(t, "the view registered", func() bool { return f.Views() == 1 })
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*websocket.Conn{v, h} {
		if _, _, err := c.Read(context.Background()); err == nil {
			t.Fatal("a socket outlived the forwarder")
		}
	}
	if f.Views() != 0 {
		t.Fatalf("%d views after Close", f.Views())
	}
}
