package session

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock/airlock/broker/localclient"
)

// TestServiceCloseForcesWhenItsContextEnds: with its context over, Close
// does not leave sockets in their close handshake behind; it cuts them and
// returns only once their goroutines are gone.
func TestServiceCloseForcesWhenItsContextEnds(t *testing.T) {
	b := startBroker(t, testLocal(), nil)
	m, _ := flow(t, b)
	host, err := localclient.DialHost(ctxT(t), b.URL, m)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if _, err := host.Hello(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Service.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want the context's cause", err)
	}
	if st := b.Stats(); st.Sockets != 0 {
		t.Fatalf("sockets left after Close: %+v", st)
	}
}
