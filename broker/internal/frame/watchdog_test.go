package frame

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/internal/frame/frametest"
)

// TestWatchdogArmsQuietsAndCuts drives the watchdog's firings by hand (no
// wait for a deadline): a firing with no write in flight goes quiet and
// the next write arms it again; a firing during a write within its
// deadline re-arms for that deadline; a firing during a write past its
// deadline cuts the connection, and no write begins afterwards.
func TestWatchdogArmsQuietsAndCuts(t *testing.T) {
	server, client := frametest.Pair(t)
	w := NewWatchdog(client)
	defer w.Stop()
	write := func(frame string, deadline time.Time) error {
		if !w.Begin(deadline) {
			return ErrWriteCut
		}
		err := client.Write(context.Background(), websocket.MessageText, []byte(frame))
		w.End()
		return err
	}
	if err := write(`{"n":1}`, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := server.Read(context.Background()); err != nil || string(got) != `{"n":1}` {
		t.Fatalf("read %q, %v", got, err)
	}
	if w.armed.Load() == 0 || w.InFlight() {
		t.Fatalf("after a write: armed %d, in flight %v", w.armed.Load(), w.InFlight())
	}
	w.expire() // nothing in flight
	if w.armed.Load() != 0 || w.cut.Load() {
		t.Fatalf("a firing with no write in flight: armed %d, cut %v", w.armed.Load(), w.cut.Load())
	}
	if !w.Begin(time.Now().Add(time.Minute)) || w.armed.Load() == 0 {
		t.Fatal("the first write after a quiet firing did not arm the watchdog")
	}
	w.expire() // a write within its deadline
	if w.armed.Load() != w.inflight.Load() || w.cut.Load() {
		t.Fatalf("a firing during a young write: armed %d for a deadline of %d, cut %v", w.armed.Load(), w.inflight.Load(), w.cut.Load())
	}
	w.inflight.Store(w.now() - 1) // the write in flight passed its deadline
	w.expire()
	if !w.cut.Load() {
		t.Fatal("a write past its deadline was not cut")
	}
	w.End()
	if err := write(`{}`, time.Now().Add(time.Minute)); !errors.Is(err, ErrWriteCut) {
		t.Fatalf("a write after the cut: %v, want ErrWriteCut", err)
	}
	if _, _, err := server.Read(context.Background()); err == nil {
		t.Fatal("the connection survived the cut")
	}
}

// TestWatchdogArmsForAnEarlierDeadline: a write whose deadline comes
// before the armed firing moves the firing up (a call with a short
// timeout after one with a long one); one whose deadline is later leaves
// it (a fixed timeout per write: no timer reset per frame).
func TestWatchdogArmsForAnEarlierDeadline(t *testing.T) {
	_, client := frametest.Pair(t)
	w := NewWatchdog(client)
	defer w.Stop()
	now := time.Now()
	w.Begin(now.Add(time.Hour))
	w.End()
	long := w.armed.Load()
	w.Begin(now.Add(2 * time.Hour))
	if w.armed.Load() != long {
		t.Fatalf("a later deadline moved the firing from %d to %d", long, w.armed.Load())
	}
	w.End()
	w.Begin(now.Add(time.Minute))
	if got, want := w.armed.Load(), w.inflight.Load(); got != want {
		t.Fatalf("an earlier deadline: armed %d, want %d", got, want)
	}
	w.End()
}

// TestWatchdogCutRefusesLaterWrites: Cut with no write in flight leaves
// the connection open and refuses every later write; Cut during a write
// cuts the connection; Stop refuses later writes too.
func TestWatchdogCutRefusesLaterWrites(t *testing.T) {
	server, client := frametest.Pair(t)
	w := NewWatchdog(client)
	w.Cut()
	if w.Begin(time.Now().Add(time.Minute)) || w.InFlight() {
		t.Fatalf("a write began after Cut (in flight %v)", w.InFlight())
	}
	if err := client.Write(context.Background(), websocket.MessageText, []byte(`{"still":"open"}`)); err != nil {
		t.Fatalf("Cut with no write in flight closed the connection: %v", err)
	}
	if _, got, err := server.Read(context.Background()); err != nil || string(got) != `{"still":"open"}` {
		t.Fatalf("read %q, %v", got, err)
	}
	w.Stop()

	server, client = frametest.Pair(t)
	w = NewWatchdog(client)
	if !w.Begin(time.Now().Add(time.Minute)) {
		t.Fatal("a write was refused before any cut")
	}
	w.Cut() // the kill, during a write
	if _, _, err := server.Read(context.Background()); err == nil {
		t.Fatal("Cut during a write left the connection open")
	}
	w.End()
	w.Stop()

	_, client = frametest.Pair(t)
	w = NewWatchdog(client)
	w.Stop()
	if w.Begin(time.Now().Add(time.Minute)) {
		t.Fatal("a write began after Stop")
	}
}
