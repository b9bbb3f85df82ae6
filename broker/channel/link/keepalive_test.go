package link

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/internal/frame/frametest"
)

// keepaliveRun pings server's peer every 10 ms with a pong bound of
// timeout while a reader takes one frame through act; it returns what the
// read ended with.
func keepaliveRun(t *testing.T, server *websocket.Conn, timeout time.Duration) <-chan error {
	t.Helper()
	var act Activity
	ctx, cancel := context.WithCancel(context.Background())
	pinged := make(chan struct{})
	go func() { defer close(pinged); keepalive(ctx, server, &act, 10*time.Millisecond, timeout) }()
	read := make(chan error, 1)
	go func() {
		_, err := act.ReadFrame(server, 1<<30)
		read <- err
	}()
	t.Cleanup(func() { cancel(); <-pinged })
	return read
}

// TestKeepaliveSparesAPeerStillSending: a peer writing one long frame
// never answers a ping until the frame is written (its pong waits behind
// it), so the pong bound passes many times over; the bytes arriving keep
// the connection, and the frame is read whole.
func TestKeepaliveSparesAPeerStillSending(t *testing.T) {
	server, client := frametest.Pair(t)
	read := keepaliveRun(t, server, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := client.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1024)
	for i := range chunk {
		chunk[i] = 'x'
	}
	// 400 chunks 5 ms apart: about 2 s of sending, several pong bounds.
	for range 400 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatalf("the keepalive cut a peer that was still sending: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("the long frame was not read: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the long frame was not read within a minute")
	}
}

// TestKeepaliveCutsASilentPeer: a peer that neither answers pings nor
// sends anything is closed once a pong is overdue.
func TestKeepaliveCutsASilentPeer(t *testing.T) {
	server, _ := frametest.Pair(t)
	read := keepaliveRun(t, server, 50*time.Millisecond)
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("read a frame nobody sent")
		}
	case <-time.After(time.Minute):
		t.Fatal("a silent peer was not cut within a minute")
	}
}

// TestKeepaliveSparesAReaderAtWork: while the reader handles a frame it
// has read (a 64 MiB answer takes seconds to parse on a loaded machine),
// the peer's pong waits unread behind it and the pong bound passes; that
// proves nothing about the peer, and the connection is kept.
func TestKeepaliveSparesAReaderAtWork(t *testing.T) {
	pings := make(chan struct{}, 64)
	server, client := frametest.PairDial(t, &websocket.DialOptions{OnPingReceived: func(context.Context, []byte) bool {
		select {
		case pings <- struct{}{}:
		default:
		}
		return true
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The client reads, so it answers every ping at once.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			if _, _, err := client.Read(ctx); err != nil {
				return
			}
		}
	}()
	var act Activity
	kctx, kcancel := context.WithCancel(context.Background())
	pinged := make(chan struct{})
	go func() { defer close(pinged); keepalive(kctx, server, &act, 10*time.Millisecond, 20*time.Millisecond) }()
	t.Cleanup(func() { kcancel(); <-pinged })

	if err := client.Write(ctx, websocket.MessageText, []byte("work")); err != nil {
		t.Fatal(err)
	}
	if _, err := act.ReadFrame(server, 1<<20); err != nil {
		t.Fatal(err)
	}
	// At work: three pings reach the client. Each after the first was sent
	// only once the one before it had gone unanswered past its bound and
	// the keepalive had kept the connection.
	for i := range 3 {
		select {
		case <-pings:
		case <-closed:
			t.Fatalf("the keepalive cut the connection while its reader was at work (after %d pings)", i)
		case <-ctx.Done():
			t.Fatal("no ping within a minute")
		}
	}
	if err := client.Write(ctx, websocket.MessageText, []byte("after")); err != nil {
		t.Fatalf("the connection was cut while its reader was at work: %v", err)
	}
	data, err := act.ReadFrame(server, 1<<20)
	if err != nil || string(data) != "after" {
		t.Fatalf("read after the work: %q, %v", data, err)
	}
}
