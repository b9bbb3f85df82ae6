package mcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/relay/contract"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/testkit"
)

const token = "0123456789abcdef0123456789abcdef"

func startHTTP(t *testing.T, cfg config.MCP) (*httptest.Server, *HTTP) {
	t.Helper()
	srv := New(Options{Backend: Router(calls.NewRouter(nil, slog.New(slog.DiscardHandler))), Transport: "http"})
	var ts *httptest.Server
	h := NewHTTP(HTTPOptions{Server: srv, Token: httpx.NewToken(token), Config: cfg,
		Port:    func() int { p, _ := strconv.Atoi(ts.URL[strings.LastIndex(ts.URL, ":")+1:]); return p },
		Refused: func(string, contract.Code) {}})
	mux := http.NewServeMux()
	h.Mount(mux)
	ts = httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	return ts, h
}

func post(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

var initialize = []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)

func TestHTTPBounds(t *testing.T) {
	ts, _ := startHTTP(t, config.MCP{MaxSessions: 1, MaxBodyBytes: 1024, SessionIdleMs: 60000})
	if code, body := post(t, ts.URL, initialize); code != 200 {
		t.Fatalf("first session: %d %s", code, body)
	}
	if code, body := post(t, ts.URL, initialize); code != 503 || !strings.Contains(body, `"UNAVAILABLE"`) {
		t.Errorf("second session past the bound: %d %s", code, body)
	}
	for _, bad := range []string{``, `not json`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":3,"method":7}`,
		`{"jsonrpc":"2.0","id":3,"id":4,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":1,"A":2}}`} {
		code, body := post(t, ts.URL, []byte(bad))
		if code != 400 || !strings.Contains(body, `"jsonrpc":"2.0"`) || !strings.Contains(body, `"error":{"code":-32`) {
			t.Errorf("%q: %d %s", bad, code, body)
		}
	}
	big := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"`), bytes.Repeat([]byte("a"), 2048)...)
	if code, body := post(t, ts.URL, append(big, `"}}}`...)); code != 400 || !strings.Contains(body, `"INVALID_MESSAGE"`) {
		t.Errorf("body over the bound: %d %s", code, body)
	}
}

// TestDrainClosesSessions: a drained /mcp closes its sessions, GET streams
// included, so the broker's HTTP shutdown is not held by them.
func TestDrainClosesSessions(t *testing.T) {
	ts, h := startHTTP(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	code, _ := post(t, ts.URL, initialize)
	if code != 200 {
		t.Fatal(code)
	}
	h.Drain()
	select {
	case <-h.drained:
	case <-time.After(5 * time.Second):
		t.Fatal("sessions not closed")
	}
	if code, body := post(t, ts.URL, initialize); code != 503 {
		t.Errorf("after drain: %d %s", code, body)
	}
}

// TestHTTPIdleSessionEnds: a session that sends nothing for
// mcp.session_idle_ms is closed, which frees its place under
// mcp.max_sessions, and its id is then unknown (404).
func TestHTTPIdleSessionEnds(t *testing.T) {
	ts, _ := startHTTP(t, config.MCP{MaxSessions: 1, MaxBodyBytes: 1 << 20, SessionIdleMs: 50})
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", bytes.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d, session id %q", resp.StatusCode, id)
	}
	// The bound is full until the idle session is closed.
	testkit.Eventually(t, "the idle session to free its place", func() bool {
		code, _ := post(t, ts.URL, initialize)
		return code == 200
	})
	ping, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	ping.Header = req.Header.Clone()
	ping.Header.Set("Mcp-Session-Id", id)
	resp, err = http.DefaultClient.Do(ping)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request in the idle-closed session: %d, want 404", resp.StatusCode)
	}
}
