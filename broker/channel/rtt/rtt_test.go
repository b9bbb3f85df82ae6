package rtt

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestRoundTrips: concurrent round trips on the one connection are each
// answered; after Close a round trip fails instead of hanging, and no
// goroutine is left (goleak in TestMain).
func TestRoundTrips(t *testing.T) {
	f, err := New(context.Background(), 300)
	if err != nil {
		t.Fatal(err)
	}
	frame := []byte(`{"v":1,"callId":"b_1000000"}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if err := f.RoundTrip(context.Background(), frame); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	f.Close()
	if err := f.RoundTrip(context.Background(), frame); err == nil {
		t.Fatal("a round trip after Close succeeded")
	}
}

// TestOneConnectionOnly: the floor's server serves its own connection and
// refuses any other, so Close never waits on a stranger's.
func TestOneConnectionOnly(t *testing.T) {
	f, err := New(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp, err := http.Get("http://" + f.addr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a second connection got %s", resp.Status)
	}
	if err := f.RoundTrip(context.Background(), []byte("x")); err != nil {
		t.Fatalf("the floor's own connection: %v", err)
	}
}

// TestAnswerTooLarge is refused before anything starts.
func TestAnswerTooLarge(t *testing.T) {
	if _, err := New(context.Background(), MaxFrame+1); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("err %v", err)
	}
}
