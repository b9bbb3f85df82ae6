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
