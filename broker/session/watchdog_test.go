package session

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
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

// TestWatchdogArmsQuietsAndCuts drives the write watchdog by hand (no
// wait for writeTimeout): a firing with no write in flight goes quiet and
// the next write arms it again; a firing during a young write re-arms; a
// firing during a write that began writeTimeout ago cuts the connection,
// and no write begins afterwards.
func TestWatchdogArmsQuietsAndCuts(t *testing.T) {
	k, client := wsPair(t)
	if err := k.write([]byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := client.Read(context.Background()); err != nil || string(got) != `{"n":1}` {
		t.Fatalf("read %q, %v", got, err)
	}
	if !k.armed.Load() || k.inflight.Load() != 0 {
		t.Fatalf("after a write: armed %v, in flight %d", k.armed.Load(), k.inflight.Load())
	}
	k.expire() // nothing in flight
	if k.armed.Load() || k.cut.Load() {
		t.Fatalf("a firing with no write in flight: armed %v, cut %v", k.armed.Load(), k.cut.Load())
	}
	if !k.beginWrite() || !k.armed.Load() {
		t.Fatal("the first write after a quiet firing did not arm the watchdog")
	}
	k.expire() // a write that just began
	if !k.armed.Load() || k.cut.Load() {
		t.Fatalf("a firing during a young write: armed %v, cut %v", k.armed.Load(), k.cut.Load())
	}
	// The write in flight began writeTimeout ago.
	k.inflight.Store(int64(time.Since(k.epoch)-writeTimeout) + 1)
	k.expire()
	if !k.cut.Load() {
		t.Fatal("a write in flight for writeTimeout was not cut")
	}
	k.inflight.Store(0)
	if err := k.write([]byte(`{}`)); !errors.Is(err, errWriteCut) {
		t.Fatalf("a write after the cut: %v, want errWriteCut", err)
	}
	if _, _, err := client.Read(context.Background()); err == nil {
		t.Fatal("the connection survived the cut")
	}
}

// TestKillRefusesLaterWrites: the kill grace running out with no write
// in flight refuses every later write (and leaves closing to the writer).
func TestKillRefusesLaterWrites(t *testing.T) {
	k, _ := wsPair(t)
	k.cutWrites()
	if err := k.write([]byte(`{}`)); !errors.Is(err, errWriteCut) {
		t.Fatalf("a write after the kill: %v, want errWriteCut", err)
	}
	if k.inflight.Load() != 0 {
		t.Fatal("a refused write left itself in flight")
	}
}
