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
	resp, err := http.Get(f.echo.URL())
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

// TestDialledEcho: a floor dialled to an echo started apart (as `airlock
// load rtt-echo` runs it, in a process of its own) round-trips, and the
// echo's Close ends its connection instead of waiting for the client.
func TestDialledEcho(t *testing.T) {
	e, err := NewEcho(64, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Dial(context.Background(), e.URL(), nil, 64)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	defer f.Close()
	for range 10 {
		if err := f.RoundTrip(context.Background(), []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	if err := f.RoundTrip(context.Background(), []byte(`{"v":1}`)); err == nil {
		t.Fatal("a round trip after the echo closed succeeded")
	}
}

// TestGuardedEcho: an echo with a guard serves only the dials it admits;
// one refused does not take the echo's one connection.
func TestGuardedEcho(t *testing.T) {
	guard := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Run") != "mine" {
				http.Error(w, "not yours", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	e, err := NewEcho(8, guard)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if f, err := Dial(context.Background(), e.URL(), nil, 8); err == nil {
		f.Close()
		t.Fatal("a dial without the header was admitted")
	}
	f, err := Dial(context.Background(), e.URL(), http.Header{"X-Run": {"mine"}}, 8)
	if err != nil {
		t.Fatalf("the admitted dial: %v", err)
	}
	defer f.Close()
	if err := f.RoundTrip(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// TestEchoBoundsHeaderReads: a local process that connects to the echo and
// never sends a request does not hold the connection (and its goroutine)
// for the rest of the run.
func TestEchoBoundsHeaderReads(t *testing.T) {
	e, err := NewEcho(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.srv.ReadHeaderTimeout <= 0 {
		t.Fatal("the echo waits forever for a request's header")
	}
}
