package link

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/internal/frame"
	"github.com/airlock/airlock/broker/internal/frame/frametest"
)

// TestWriterWrites: frames written through a Writer arrive in order.
func TestWriterWrites(t *testing.T) {
	server, client := frametest.Pair(t)
	w := NewWriter(client)
	defer w.Stop()
	for _, f := range []string{`{"a":1}`, `{"b":2}`} {
		if err := w.Write([]byte(f), time.Minute); err != nil {
			t.Fatal(err)
		}
		_, got, err := server.Read(context.Background())
		if err != nil || string(got) != f {
			t.Fatalf("read %q, %v; want %q", got, err, f)
		}
	}
}

// TestWriterCutsAnOverdueWrite: a write still in flight at its deadline
// (the peer reads nothing, so the socket's buffers fill) cuts the
// connection, and every later write is refused at once.
func TestWriterCutsAnOverdueWrite(t *testing.T) {
	_, client := frametest.Pair(t) // the server's end is never read
	w := NewWriter(client)
	defer w.Stop()
	big := make([]byte, 1<<20)
	var err error
	for err == nil { // blocks once the buffers are full, until cut
		err = w.Write(big, 50*time.Millisecond)
	}
	if errors.Is(err, frame.ErrWriteCut) {
		t.Fatalf("the overdue write itself should fail with the connection's error, got %v", err)
	}
	if err := w.Write([]byte(`{}`), time.Minute); !errors.Is(err, frame.ErrWriteCut) {
		t.Fatalf("write after the cut: %v, want frame.ErrWriteCut", err)
	}
}

// TestWriterTakeGivesUp: waiting for the turn ends when stop is closed or
// expired fires, taking nothing; the turn's holder is not disturbed.
func TestWriterTakeGivesUp(t *testing.T) {
	server, client := frametest.Pair(t)
	w := NewWriter(client)
	defer w.Stop()
	if !w.Take(nil, nil) {
		t.Fatal("an idle writer's turn was not given")
	}
	stop := make(chan struct{})
	close(stop)
	if w.Take(stop, nil) {
		t.Fatal("Take went past a closed stop while the turn was held")
	}
	expired := make(chan time.Time, 1)
	expired <- time.Now()
	if w.Take(nil, expired) {
		t.Fatal("Take went past an expiry while the turn was held")
	}
	if err := w.WriteTaken([]byte(`{"held":true}`), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := server.Read(context.Background()); err != nil || string(got) != `{"held":true}` {
		t.Fatalf("read %q, %v", got, err)
	}
	if !w.Take(stop, nil) {
		t.Fatal("the turn given back was not given again")
	}
	_ = w.WriteTaken([]byte(`{}`), time.Now().Add(time.Minute))
}

// TestWriterStopRefuses: once stopped, a writer writes nothing.
func TestWriterStopRefuses(t *testing.T) {
	_, client := frametest.Pair(t)
	w := NewWriter(client)
	if err := w.Write([]byte(`{}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if err := w.Write([]byte(`{}`), time.Minute); !errors.Is(err, frame.ErrWriteCut) {
		t.Fatalf("write after Stop: %v, want frame.ErrWriteCut", err)
	}
}
