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
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
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
	req.Header = mcpHeader()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

var initialize = []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)

// TestHTTPGuards: the Origin rule runs before the token, so a foreign
// Origin is 403 with or without a token; a second Origin header (the
// broker's own first) is foreign too; the token is checked as a bearer or
// X-Tensorviz-Token. Each refusal is section 1.4's body.
func TestHTTPGuards(t *testing.T) {
	ts, _ := startHTTP(t, config.MCP{MaxSessions: 16, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	own := "http://127.0.0.1:" + ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	for _, c := range []struct {
		name   string
		header http.Header
		status int
		code   string
	}{
		{"no token", http.Header{}, 401, "INVALID_CREDENTIALS"},
		{"wrong token", http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 32)}}, 401, "INVALID_CREDENTIALS"},
		{"wrong X-Tensorviz-Token", http.Header{"X-Tensorviz-Token": {strings.Repeat("x", 32)}}, 401, "INVALID_CREDENTIALS"},
		{"foreign Origin, no token", http.Header{"Origin": {"https://evil.example"}}, 403, "INVALID_ORIGIN"},
		{"foreign Origin", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"https://evil.example"}}, 403, "INVALID_ORIGIN"},
		{"another port", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://127.0.0.1:1"}}, 403, "INVALID_ORIGIN"},
		{"own Origin, then a foreign one", http.Header{"Authorization": {"Bearer " + token}, "Origin": {own, "https://evil.example"}}, 403, "INVALID_ORIGIN"},
		{"own Origin", http.Header{"Authorization": {"Bearer " + token}, "Origin": {own}}, 200, ""},
		{"X-Tensorviz-Token", http.Header{"X-Tensorviz-Token": {token}}, 200, ""},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", bytes.NewReader(initialize))
		req.Header = c.header
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.code != "" && !strings.Contains(string(body), `"code":"`+c.code+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", c.name, resp.StatusCode, body, c.status, c.code)
		}
	}
}

// TestHTTPInertWithoutToken: without a launch token /mcp is a plain 404,
// whatever the request carries: an initialize with a token, or a
// stateless call.
func TestHTTPInertWithoutToken(t *testing.T) {
	srv := New(Options{Backend: Router(calls.NewRouter(nil, slog.New(slog.DiscardHandler))), Transport: "http"})
	h := NewHTTP(HTTPOptions{Server: srv, Config: config.MCP{MaxSessions: 1, MaxBodyBytes: 1024, SessionIdleMs: 1000},
		Port: func() int { return 1 }, Refused: func(string, contract.Code) {}})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	}()
	withToken := http.Header{"Authorization": {"Bearer " + token}}
	for name, c := range map[string]struct {
		header http.Header
		body   []byte
	}{
		"initialize with a token": {withToken, initialize},
		"stateless call":          {statelessHeader("tools/call", "read_notes"), statelessCall},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/mcp", bytes.NewReader(c.body))
		req.Header = c.header
		h.ServeHTTP(rec, req)
		if rec.Code != 404 || strings.Contains(rec.Body.String(), "read_notes") {
			t.Errorf("%s: inert /mcp answered %d %s", name, rec.Code, rec.Body)
		}
	}
}

// TestHTTPSDKRefusalsAreJSON: what the SDK refuses in plain text (an
// unknown method, an unknown session) is answered with section 1.4's
// body, which never quotes the request.
func TestHTTPSDKRefusalsAreJSON(t *testing.T) {
	ts, _ := startHTTP(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	session := initSession(t, ts.URL)
	for _, c := range []struct {
		session, body string
		status        int
		code          string
	}{
		{session, `{"jsonrpc":"2.0","id":2,"method":"no/such-method"}`, 400, "INVALID_MESSAGE"},
		{session, `{"jsonrpc":"2.0","method":"notifications/no-such"}`, 400, "INVALID_MESSAGE"},
		{"no-such-session", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 404, "NOT_FOUND"},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(c.body))
		req.Header = mcpHeader()
		if c.session != "" {
			req.Header.Set("Mcp-Session-Id", c.session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.Contains(string(body), `"code":"`+c.code+`"`) || strings.Contains(string(body), "no-such") {
			t.Errorf("%s: %d %s %s, want %d %s", c.body, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.code)
		}
	}
}

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
	id := initSession(t, ts.URL)
	// The bound is full until the idle session is closed.
	testkit.Eventually(t, "the idle session to free its place", func() bool {
		code, _ := post(t, ts.URL, initialize)
		return code == 200
	})
	ping, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	ping.Header = mcpHeader()
	ping.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(ping)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request in the idle-closed session: %d, want 404", resp.StatusCode)
	}
}

// initSession initializes an MCP session on the /mcp of base and returns
// its id, failing the test unless the answer is 200 with an id.
func initSession(t testing.TB, base string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/mcp", bytes.NewReader(initialize))
	req.Header = mcpHeader()
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
	return id
}

// mcpHeader is what a streamable-HTTP client sends with every POST: the
// launch token, a JSON body, and both answer forms accepted.
func mcpHeader() http.Header {
	return http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}}
}
