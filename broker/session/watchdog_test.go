package session

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/internal/frame"
)

// wsPair is a server-side socket (as the broker holds it) and the client
// end of its connection, both closed at cleanup.
func wsPair(t *testing.T) (*socket, *websocket.Conn) {
	t.Helper()
	accepted := make(chan *websocket.Conn, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
		<-release
	}))
	client, _, err := websocket.Dial(context.Background(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := newSocket(<-accepted, 16, 1<<20)
	t.Cleanup(func() {
		k.stopKill()
		_ = k.conn.CloseNow()
		_ = client.CloseNow()
		close(release)
		srv.Close()
	})
	return k, client
}

// The watchdog's firings (armed when quiet, re-armed for a write in
// flight, a cut past the deadline) are driven by hand in frame's
// TestWatchdogArmsQuietsAndCuts; these tests hold the socket to what it
// relies on.

// TestSocketWrites: a socket's writes arrive, each clearing its mark.
func TestSocketWrites(t *testing.T) {
	k, client := wsPair(t)
	if err := k.write([]byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := client.Read(context.Background()); err != nil || string(got) != `{"n":1}` {
		t.Fatalf("read %q, %v", got, err)
	}
	if k.wd.InFlight() {
		t.Fatal("a finished write is still in flight")
	}
}

// TestKillRefusesLaterWrites: the kill grace running out with no write
// in flight refuses every later write (and leaves closing to the writer).
func TestKillRefusesLaterWrites(t *testing.T) {
	k, _ := wsPair(t)
	k.cutWrites()
	if err := k.write([]byte(`{}`)); !errors.Is(err, frame.ErrWriteCut) {
		t.Fatalf("a write after the kill: %v, want frame.ErrWriteCut", err)
	}
	if k.wd.InFlight() {
		t.Fatal("a refused write left itself in flight")
	}
}

// TestCloseNowRefusesLaterWrites: closeNow cuts the connection and no
// write begins after it.
func TestCloseNowRefusesLaterWrites(t *testing.T) {
	k, client := wsPair(t)
	k.closeNow()
	if err := k.write([]byte(`{}`)); !errors.Is(err, frame.ErrWriteCut) {
		t.Fatalf("a write after closeNow: %v, want frame.ErrWriteCut", err)
	}
	if _, _, err := client.Read(context.Background()); err == nil {
		t.Fatal("the connection survived closeNow")
	}
}
