package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// answerer is a component whose one route answers 204 at once.
type answerer struct{}

func (answerer) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
}
func (answerer) Drain()                      {}
func (answerer) Close(context.Context) error { return nil }

// TestIdleKeepAliveConnectionIsClosed: a connection that stays open after
// its answered request, sending nothing, is closed by the server once
// http.idle_timeout_ms has passed (nothing else would close it: the
// header timeout starts only when a next request's bytes arrive).
func TestIdleKeepAliveConnectionIsClosed(t *testing.T) {
	cfg := &config.Config{Listen: "127.0.0.1:0", HTTP: config.HTTP{MaxConnections: 16,
		HeaderTimeoutMs: 60000, BodyTimeoutMs: 60000, WriteTimeoutMs: 60000, IdleTimeoutMs: 200}}
	s := New(Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Components: []Component{answerer{}}})
	ln, mln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln, mln) }()
	defer func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The test's own bound, far past the idle timeout: a read still
	// waiting then is a connection the server kept.
	if err := c.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /ok HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", s.Port())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Close {
		t.Fatalf("GET /ok: %d, close %v; want 204 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection read %q, %v; want it closed by the server (EOF)", n, err)
	}
}

// TestCheckTokenCountsCharacters: the 32 of the launch token rule are
// characters, not bytes: 16 two-byte characters are refused and 32 pass;
// an empty token (an inert broker) passes; the refusal never quotes the
// token.
func TestCheckTokenCountsCharacters(t *testing.T) {
	for tok, ok := range map[string]bool{
		"":                      true,
		strings.Repeat("k", 31): false,
		strings.Repeat("k", 32): true,
		strings.Repeat("é", 16): false, // 32 bytes
		strings.Repeat("é", 31): false, // 62 bytes
		strings.Repeat("é", 32): true,
		strings.Repeat("🔑", 31): false, // 124 bytes
		strings.Repeat("🔑", 32): true,
	} {
		err := CheckToken(tok)
		if (err == nil) != ok {
			t.Errorf("%d characters, %d bytes: %v, want accepted %v", utf8.RuneCountInString(tok), len(tok), err, ok)
		}
		if err != nil && (!errors.Is(err, ErrShortToken) || strings.Contains(err.Error(), tok)) {
			t.Errorf("%d characters: %v, want ErrShortToken without the token", utf8.RuneCountInString(tok), err)
		}
	}
}
