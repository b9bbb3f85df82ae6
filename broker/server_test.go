package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/airlock/airlock/config"
)

// holder is a component whose one route holds its request until the
// request's context ends.
type holder struct{ entered chan struct{} }

func (h *holder) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /hold", func(_ http.ResponseWriter, r *http.Request) {
		close(h.entered)
		<-r.Context().Done()
	})
}
func (*holder) Drain()                      {}
func (*holder) Close(context.Context) error { return nil }

// TestShutdownForcesWhenItsContextEnds: a request still running when the
// drain's context ends has its connection closed, and Shutdown returns the
// context's cause.
func TestShutdownForcesWhenItsContextEnds(t *testing.T) {
	h := &holder{entered: make(chan struct{})}
	s := New(Options{Config: &config.Config{Listen: "127.0.0.1:0", HTTP: config.HTTP{MaxConnections: 16}},
		Logger: slog.New(slog.DiscardHandler), Components: []Component{h}})
	ln, mln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln, mln) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	answered := make(chan error, 1)
	go func() {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/hold", s.Port()))
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case <-h.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the request never reached its handler")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the context's deadline", err)
	}
	select {
	case err := <-answered:
		if err == nil {
			t.Error("the held request was answered")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the held request's connection outlived Shutdown")
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
}
