package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// statelessFixture is /mcp over a catalog of read_notes (echo), counting
// the calls that reach the executor.
type statelessFixture struct {
	ts    *httptest.Server
	h     *HTTP
	src   *source
	reg   *metrics.Registry
	calls atomic.Int64
}

func startStateless(t testing.TB, cfg config.MCP) *statelessFixture {
	t.Helper()
	f := &statelessFixture{src: &source{}, reg: metrics.New()}
	counted := wire.ExecutorFunc(func(ctx context.Context, c wire.Call) wire.Answer {
		f.calls.Add(1)
		return echo(ctx, c)
	})
	f.src.set(route("notes", counted, nil, "read_notes"))
	srv := New(Options{Backend: Router(calls.NewRouter(f.reg, slog.New(slog.DiscardHandler), f.src)), Transport: "http", Metrics: f.reg})
	f.h = NewHTTP(HTTPOptions{Server: srv, Token: httpx.NewToken(token), Config: cfg,
		Port:    func() int { p, _ := strconv.Atoi(f.ts.URL[strings.LastIndex(f.ts.URL, ":")+1:]); return p },
		Refused: func(string, contract.Code) {}})
	mux := http.NewServeMux()
	f.h.Mount(mux)
	f.ts = httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.h.Close(ctx); err != nil {
			t.Error(err)
		}
		f.ts.Close()
	})
	return f
}

// statelessMeta is the _meta a 2026-07-28 request carries in place of a
// session.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// statelessCall is a raw 2026-07-28 tools/call of read_notes.
var statelessCall = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_notes","arguments":{"path":"a"},` + statelessMeta + `}}`)

// statelessHeader is what a 2026-07-28 client sends beside the body: no
// session, the revision, the method and the name of what it calls.
func statelessHeader(method, name string) http.Header {
	h := mcpHeader()
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return h
}

func (f *statelessFixture) do(t *testing.T, header http.Header, body []byte) (int, http.Header, string) {
	t.Helper()
	status, h, data := f.post(t, header, body)
	return status, h, string(data)
}

// post POSTs body to /mcp with header and reads the whole answer.
func (f *statelessFixture) post(t testing.TB, header http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.ts.URL+"/mcp", bytes.NewReader(body))
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// TestStatelessGuards: a 2026-07-28 tools/call, which opens no session,
// meets the guards of every other request: the Origin rule before the
// token, the token as a bearer or X-Tensorviz-Token, section 1.4's
// bodies; a refused call never reaches the executor.
func TestStatelessGuards(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	own := "http://127.0.0.1:" + f.ts.URL[strings.LastIndex(f.ts.URL, ":")+1:]
	for _, c := range []struct {
		name   string
		set    http.Header
		status int
		code   string
	}{
		{"no token", http.Header{"Authorization": nil}, 401, "INVALID_CREDENTIALS"},
		{"wrong token", http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 32)}}, 401, "INVALID_CREDENTIALS"},
		{"wrong X-Tensorviz-Token", http.Header{"Authorization": nil, "X-Tensorviz-Token": {strings.Repeat("x", 32)}}, 401, "INVALID_CREDENTIALS"},
		{"foreign Origin, no token", http.Header{"Authorization": nil, "Origin": {"https://evil.example"}}, 403, "INVALID_ORIGIN"},
		{"foreign Origin", http.Header{"Origin": {"https://evil.example"}}, 403, "INVALID_ORIGIN"},
		{"another port", http.Header{"Origin": {"http://127.0.0.1:1"}}, 403, "INVALID_ORIGIN"},
		{"own Origin, then a foreign one", http.Header{"Origin": {own, "https://evil.example"}}, 403, "INVALID_ORIGIN"},
	} {
		h := statelessHeader("tools/call", "read_notes")
		for k, v := range c.set {
			if v == nil {
				h.Del(k)
			} else {
				h[k] = v
			}
		}
		status, _, body := f.do(t, h, statelessCall)
		if status != c.status || !strings.Contains(body, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, body, c.status, c.code)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("refused stateless calls reached the executor %d times", n)
	}
	for name, h := range map[string]http.Header{
		"bearer":            statelessHeader("tools/call", "read_notes"),
		"X-Tensorviz-Token": {"X-Tensorviz-Token": {token}},
		"own Origin":        {"Origin": {own}},
	} {
		if name != "bearer" {
			base := statelessHeader("tools/call", "read_notes")
			if name == "X-Tensorviz-Token" {
				base.Del("Authorization")
			}
			for k, v := range h {
				base[k] = v
			}
			h = base
		}
		status, header, body := f.do(t, h, statelessCall)
		if status != 200 || !strings.Contains(body, `"structuredContent":{"path":"a"}`) || header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %d %v %s", name, status, header, body)
		}
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("admitted stateless calls reached the executor %d times, want 3", n)
	}
}

// TestStatelessDiscoverListCall: a raw 2026-07-28 client discovers the
// revisions (the stateless one and every one with sessions), lists and
// calls with no session, and a client of an older revision still gets a
// session beside it.
func TestStatelessDiscoverListCall(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 1, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	status, header, body := f.do(t, statelessHeader("server/discover", ""),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+statelessMeta+`}}`))
	if status != 200 || header.Get("Mcp-Session-Id") != "" ||
		!strings.Contains(body, `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`) ||
		!strings.Contains(body, `"tools":{"listChanged":true}`) {
		t.Fatalf("server/discover: %d %v %s", status, header, body)
	}
	status, _, body = f.do(t, statelessHeader("tools/list", ""),
		[]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+statelessMeta+`}}`))
	if status != 200 || !strings.Contains(body, `"name":"read_notes"`) || !strings.Contains(body, `"ttlMs":0`) {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	status, _, body = f.do(t, statelessHeader("tools/call", "read_notes"), statelessCall)
	if status != 200 || !strings.Contains(body, `"structuredContent":{"path":"a"}`) {
		t.Fatalf("tools/call: %d %s", status, body)
	}
	// The stateless requests took no place under max_sessions (1).
	initSession(t, f.ts.URL)
	if got := testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("tools-call", "ok")); got != 1 {
		t.Errorf("stateless tools/call counted %v", got)
	}
	if got := testutil.ToFloat64(f.reg.MCPSessions.WithLabelValues("http")); got != 1 {
		t.Errorf("mcp_sessions{http} = %v, want the one initialized session", got)
	}
}

// TestStatelessSDKClient: the SDK's client at 2026-07-28 discovers,
// lists, calls, and hears list_changed on its subscriptions/listen stream.
func TestStatelessSDKClient(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	c := f.connectSDK(t)
	if v := c.InitializeResult().ProtocolVersion; v != mcptest.Stateless {
		t.Fatalf("negotiated %s", v)
	}
	if tools := c.List(t); tools["read_notes"] == nil {
		t.Fatalf("tools/list: %v", tools)
	}
	if res := c.Call(t, "read_notes", map[string]any{"path": "b"}); res.IsError || mcptest.Text(res) != `{"path":"b"}` {
		t.Fatalf("tools/call: %+v", res)
	}
	c.Forget()
	f.src.set(route("notes", echo, nil, "read_notes", "search"))
	f.h.o.Server.Changed()
	c.Wait(t, mcptest.ListChanged)
	if tools := c.List(t); tools["search"] == nil {
		t.Fatalf("tools/list after the change: %v", tools)
	}
}

// tokenTransport adds the launch token to every request.
type tokenTransport struct{ base http.RoundTripper }

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return tt.base.RoundTrip(r)
}

// statelessListen is a raw subscriptions/listen for list_changed.
var statelessListen = []byte(`{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + statelessMeta + `}}`)

// TestStatelessBounds: a stateless body over mcp.max_body_bytes is
// refused like any; a subscriptions/listen stream, the stateless form of
// a session's stream, holds a place under mcp.max_sessions and ends after
// mcp.session_idle_ms.
func TestStatelessBounds(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 1, MaxBodyBytes: 1024, SessionIdleMs: 300})
	big := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+statelessMeta+`,"x":"`), bytes.Repeat([]byte("a"), 2048)...)
	if status, _, body := f.do(t, statelessHeader("tools/list", ""), append(big, `"}}`...)); status != 400 || !strings.Contains(body, `"INVALID_MESSAGE"`) {
		t.Errorf("body over the bound: %d %s", status, body)
	}
	start := time.Now()
	req, _ := http.NewRequest("POST", f.ts.URL+"/mcp", bytes.NewReader(statelessListen))
	req.Header = statelessHeader("subscriptions/listen", "")
	resp, err := http.DefaultClient.Do(req) // answered with the stream's acknowledgement
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// While the listen is open, the one place is taken.
	if status, _, body := f.do(t, statelessHeader("subscriptions/listen", ""), statelessListen); status != 503 || !strings.Contains(body, `"UNAVAILABLE"`) {
		t.Errorf("a second listen past max_sessions: %d %s", status, body)
	}
	if status, body := post(t, f.ts.URL, initialize); status != 503 {
		t.Errorf("initialize past max_sessions: %d %s", status, body)
	}
	data, _ := io.ReadAll(resp.Body)
	if d := time.Since(start); resp.StatusCode != 200 || !strings.Contains(string(data), `"id":9,"result":{`) || !strings.Contains(string(data), `"io.modelcontextprotocol/subscriptionId":9}}}`) || d < 250*time.Millisecond {
		t.Errorf("the listen ended after %v with %d %s", d, resp.StatusCode, data)
	}
	if got := testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("subscriptions-listen", "ok")); got != 1 {
		t.Errorf("the listen ended by its bound counted %v ok", got)
	}
	// Its place is free again.
	initSession(t, f.ts.URL)
}

// TestStatelessListenEnds: when the server ends the SDK client's listen
// (mcp.session_idle_ms), the client goes on listing and calling.
func TestStatelessListenEnds(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 1, MaxBodyBytes: 1 << 20, SessionIdleMs: 100})
	c := f.connectSDK(t)
	testkit.Eventually(t, "the listen to end", func() bool {
		return f.h.listens.Load() == 0 && testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("subscriptions-listen", "ok")) == 1
	})
	if tools := c.List(t); tools["read_notes"] == nil {
		t.Fatalf("tools/list: %v", tools)
	}
	if res := c.Call(t, "read_notes", map[string]any{"path": "c"}); res.IsError {
		t.Fatalf("tools/call: %+v", res)
	}
}

// TestStatelessOverAConnection: over a connection (stdio, here in
// memory) the SDK's client at 2026-07-28 discovers instead of
// initializing, which counts the session; it lists, calls, and hears
// list_changed on its subscriptions/listen.
func TestStatelessOverAConnection(t *testing.T) {
	f := startAt(t, mcptest.Stateless, route("notes", echo, nil, "read_notes"))
	if v := f.cs.InitializeResult().ProtocolVersion; v != mcptest.Stateless {
		t.Fatalf("negotiated %s", v)
	}
	if got := testutil.ToFloat64(f.reg.MCPSessions.WithLabelValues("stdio")); got != 1 {
		t.Errorf("mcp_sessions{stdio} = %v after server/discover", got)
	}
	if tools := f.cs.List(t); tools["read_notes"] == nil {
		t.Fatalf("tools/list: %v", tools)
	}
	if res := f.cs.Call(t, "read_notes", map[string]any{"path": "d"}); res.IsError || mcptest.Text(res) != `{"path":"d"}` {
		t.Fatalf("tools/call: %+v", res)
	}
	f.cs.Forget()
	f.src.set(route("notes", echo, nil, "read_notes", "search"))
	f.srv.Changed()
	f.cs.Wait(t, mcptest.ListChanged)
	if tools := f.cs.List(t); tools["search"] == nil {
		t.Fatalf("tools/list after the change: %v", tools)
	}
}

// TestStatelessStdioLines: `airlock mcp`'s own stdio connection carries
// 2026-07-28 line by line: server/discover, tools/list and tools/call,
// each with the revision in its _meta.
func TestStatelessStdioLines(t *testing.T) {
	srv, reg, inW, outR, served := stdioServer()
	defer srv.Close()
	lines := bufio.NewReader(outR)
	exchange := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := exchange(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + statelessMeta + `}}`); !strings.Contains(got, `"supportedVersions":["2026-07-28",`) {
		t.Fatalf("server/discover: %s", got)
	}
	if got := exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + statelessMeta + `}}`); !strings.Contains(got, `"name":"read_notes"`) {
		t.Fatalf("tools/list: %s", got)
	}
	if got := exchange(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_notes","arguments":{"path":"e"},` + statelessMeta + `}}`); !strings.Contains(got, `"structuredContent":{"path":"e"}`) {
		t.Fatalf("tools/call: %s", got)
	}
	if got := testutil.ToFloat64(reg.MCPRequests.WithLabelValues("server-discover", "ok")); got != 1 {
		t.Errorf("server/discover counted %v", got)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("session ended with %v", err)
	}
	outR.Close()
}

// TestStatelessRefusals: a stateless request without its _meta, with a
// header that is not its _meta's revision, or at a revision the broker
// does not speak is a JSON-RPC error; a GET without a session is 400 as
// at every revision.
func TestStatelessRefusals(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	later := statelessHeader("tools/list", "")
	later.Set("Mcp-Protocol-Version", "2099-01-01")
	for _, c := range []struct {
		name   string
		header http.Header
		body   string
		want   string
	}{
		{"no _meta", statelessHeader("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `"code":-32602`},
		{"another revision in _meta", statelessHeader("tools/list", ""),
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, `"error":{"code":-3`},
		{"a later revision", later,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, `"code":-32022`},
		{"no Mcp-Method", mcpHeaderAt("2026-07-28"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + statelessMeta + `}}`, `"error":{"code":-3`},
	} {
		status, _, body := f.do(t, c.header, []byte(c.body))
		if status != 400 || !strings.Contains(body, `"jsonrpc":"2.0"`) || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 %s", c.name, status, body, c.want)
		}
	}
	if !strings.Contains(f.doLater(t), `"supported":["2026-07-28"`) {
		t.Errorf("a later revision is not told the revisions spoken")
	}
	req, _ := http.NewRequest("GET", f.ts.URL+"/mcp", nil)
	req.Header = statelessHeader("", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"INVALID_MESSAGE"`) {
		t.Errorf("GET without a session: %d %s", resp.StatusCode, body)
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("refused requests called %d times", n)
	}
}

// doLater is a tools/list at a revision after 2026-07-28.
func (f *statelessFixture) doLater(t *testing.T) string {
	h := statelessHeader("tools/list", "")
	h.Set("Mcp-Protocol-Version", "2099-01-01")
	_, _, body := f.do(t, h, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	return body
}

func mcpHeaderAt(revision string) http.Header {
	h := mcpHeader()
	h.Set("Mcp-Protocol-Version", revision)
	return h
}

// TestStatelessCancelByClosing: a stateless client cancels a call by
// closing its request: the call's context ends, and it is counted
// cancelled.
func TestStatelessCancelByClosing(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	started, stopped := make(chan struct{}), make(chan struct{})
	f.src.set(route("notes", wire.ExecutorFunc(func(ctx context.Context, c wire.Call) wire.Answer {
		close(started)
		<-ctx.Done()
		close(stopped)
		return wire.Refuse(c.CallID, wire.Cancelled, nil)
	}), nil, "read_notes"))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.ts.URL+"/mcp", bytes.NewReader(statelessCall))
	req.Header = statelessHeader("tools/call", "read_notes")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the call ran on after its request closed")
	}
	<-done
	testkit.Eventually(t, "the call to be counted cancelled", func() bool {
		return testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("tools-call", metrics.Cancelled)) == 1
	})
}

// TestDrainEndsListens: a drained /mcp ends the open stateless listens,
// so they do not hold the broker's shutdown.
func TestDrainEndsListens(t *testing.T) {
	f := startStateless(t, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	req, _ := http.NewRequest("POST", f.ts.URL+"/mcp", bytes.NewReader(statelessListen))
	req.Header = statelessHeader("subscriptions/listen", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	f.h.Drain()
	select {
	case <-f.h.drained:
	case <-time.After(5 * time.Second):
		t.Fatal("listen not ended by the drain")
	}
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, resp.Body); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen's stream outlived the drain")
	}
	if n := f.h.listens.Load(); n != 0 {
		t.Errorf("%d listens still hold a place", n)
	}
}

// connectSDK connects the SDK's client, with the token, at 2026-07-28; it
// is closed at cleanup.
func (f *statelessFixture) connectSDK(t *testing.T) *mcptest.Client {
	t.Helper()
	hc := &http.Client{Transport: tokenTransport{http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mcptest.ConnectAt(ctx, &sdk.StreamableClientTransport{Endpoint: f.ts.URL + "/mcp", HTTPClient: hc}, mcptest.Stateless)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkHTTPCallStateless is one stateless tools/call on /mcp with the
// SDK's client, against an executor that answers at once.
func BenchmarkHTTPCallStateless(b *testing.B) {
	f := startStateless(b, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	hc := &http.Client{Transport: tokenTransport{http.DefaultTransport}}
	ctx := context.Background()
	c, err := mcptest.ConnectAt(ctx, &sdk.StreamableClientTransport{Endpoint: f.ts.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, mcptest.Stateless)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchSDKCalls(b, c)
}

// benchSDKCalls calls read_notes with c in b's loop, with params of its
// own each call: at 2026-07-28 the SDK's client writes _meta into them.
func benchSDKCalls(b *testing.B, c *mcptest.Client) {
	ctx := context.Background()
	args := json.RawMessage(`{"path":"a.md"}`)
	b.ReportAllocs()
	for b.Loop() {
		if res, err := c.CallTool(ctx, &sdk.CallToolParams{Name: "read_notes", Arguments: args}); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkHTTPCallSessionRaw is BenchmarkHTTPCallStatelessRaw in a
// session (2025-11-25): the floor of a tools/call on /mcp.
func BenchmarkHTTPCallSessionRaw(b *testing.B) {
	f := startStateless(b, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	header := mcpHeader()
	header.Set("Mcp-Session-Id", initSession(b, f.ts.URL))
	header.Set("Mcp-Protocol-Version", mcptest.Revision)
	if status, _, data := f.post(b, header, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); status != http.StatusAccepted {
		b.Fatalf("initialized: %d %s", status, data)
	}
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_notes","arguments":{"path":"a"}}}`)
	f.benchPosts(b, header, call)
}

// benchPosts POSTs call in b's loop and checks each answer carries
// structured content.
func (f *statelessFixture) benchPosts(b *testing.B, header http.Header, call []byte) {
	b.ReportAllocs()
	for b.Loop() {
		if status, _, data := f.post(b, header, call); status != http.StatusOK || !bytes.Contains(data, []byte(`"structuredContent"`)) {
			b.Fatalf("%d %s", status, data)
		}
	}
}

// BenchmarkHTTPCallStatelessRaw is BenchmarkHTTPCallStateless with a
// plain HTTP client posting the request's bytes: what the server side
// alone costs.
func BenchmarkHTTPCallStatelessRaw(b *testing.B) {
	f := startStateless(b, config.MCP{MaxSessions: 4, MaxBodyBytes: 1 << 20, SessionIdleMs: 60000})
	header := statelessHeader("tools/call", "read_notes")
	// The _meta the SDK's client sends: the revision, the client and its
	// capabilities.
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_notes","arguments":{"path":"a"},"_meta":{` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	f.benchPosts(b, header, call)
}
