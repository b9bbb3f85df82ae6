package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// headerTransport adds headers to every request: the token of /mcp.
type headerTransport struct {
	header http.Header
	base   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// connectHTTP connects the Go SDK's client to the broker's /mcp with
// header on every request.
func connectHTTP(t *testing.T, p *proc, header http.Header) *mcptest.Client {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{header, http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mcptest.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: p.URL() + "/mcp", HTTPClient: hc})
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	p := w.broker

	// The guards, each with section 1.4's body.
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	accept := "application/json, text/event-stream"
	for name, c := range map[string]struct {
		header map[string]string
		status int
		code   string
	}{
		"no token":                 {map[string]string{"Accept": accept}, 401, "INVALID_CREDENTIALS"},
		"wrong token":              {map[string]string{"Accept": accept, "Authorization": "Bearer " + strings.Repeat("x", 40)}, 401, "INVALID_CREDENTIALS"},
		"foreign Origin":           {map[string]string{"Accept": accept, "Authorization": "Bearer " + testToken, "Origin": "https://evil.example"}, 403, "INVALID_ORIGIN"},
		"foreign Origin, no token": {map[string]string{"Accept": accept, "Origin": "https://evil.example"}, 403, "INVALID_ORIGIN"},
		"other port":               {map[string]string{"Accept": accept, "Authorization": "Bearer " + testToken, "Origin": "http://127.0.0.1:1"}, 403, "INVALID_ORIGIN"},
		"foreign Host":             {map[string]string{"Accept": accept, "Authorization": "Bearer " + testToken, "Host": "evil.example:" + portOf(p.URL())}, 403, "INVALID_ORIGIN"},
	} {
		status, body, _ := p.do("POST", "/mcp", c.header, initialize)
		if status != c.status || !strings.Contains(string(body), `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	// Two Origin headers, the broker's own first, are refused: the second
	// is a foreign one.
	req, _ := http.NewRequest("POST", p.URL()+"/mcp", bytes.NewReader(initialize))
	req.Header = http.Header{"Accept": {accept}, "Content-Type": {"application/json"}, "Authorization": {"Bearer " + testToken},
		"Origin": {"http://127.0.0.1:" + portOf(p.URL()), "https://evil.example"}}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), `"code":"INVALID_ORIGIN"`) {
		t.Errorf("two Origin headers: %d %s", resp.StatusCode, body)
	}
	// The broker's own origin is let in.
	status, _, _ := p.do("POST", "/mcp", map[string]string{"Accept": accept, "Content-Type": "application/json",
		"X-Tensorviz-Token": testToken, "Origin": "http://localhost:" + portOf(p.URL())}, initialize)
	if status != 200 {
		t.Errorf("own origin: %d", status)
	}

	c := connectHTTP(t, p, http.Header{"Authorization": {"Bearer " + testToken}})
	if tools := c.List(t); len(tools) != 0 {
		t.Fatalf("tools before the environment: %v", tools)
	}

	// An environment connecting, then leaving, is announced. It serves two
	// descriptors declaring the same tools: each is listed qualified.
	bearer := w.pair("lab")
	env := w.startEnv(bearer, chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds, "slow": w.slow}))
	c.Wait(t, mcptest.ListChanged)
	w.waitServing("fx", w.bounds)
	tools := c.List(t)
	if tools["fx.echo"] == nil || tools["fx.echo"].Meta["executor"] != "machine:lab" || tools["slow.loop"] == nil || tools["echo"] != nil {
		t.Fatalf("tools with the environment: %v", tools)
	}
	res := c.Call(t, "fx.echo", map[string]any{"hi": 1})
	if res.IsError {
		t.Fatalf("echo through the environment: %q", mcptest.Text(res))
	}
	res = c.Call(t, "fx.trap", nil)
	if !res.IsError || !strings.HasPrefix(mcptest.Text(res), "exec-threw: ") {
		t.Errorf("trap: %q", mcptest.Text(res))
	}

	// A cancelled call counts as cancelled, and progress reaches the
	// client over its session's stream.
	ctx, cancel := context.WithCancel(context.Background())
	params := &sdk.CallToolParams{Name: "slow.loop", Arguments: map[string]any{}}
	params.SetProgressToken(7)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, params)
		done <- err
	}()
	c.Wait(t, mcptest.Progress)
	cancel()
	if err := testkit.Receive(t, "the cancelled call to return", done); err == nil {
		t.Error("the cancelled call returned a result")
	}
	testkit.Eventually(t, "the cancelled call to be counted", func() bool {
		return w.metric("airlock_tool_calls_total", "descriptor", "slow", "tool", "loop", "outcome", "cancelled") == 1
	})

	c.Forget()
	env.Stop()
	c.Wait(t, mcptest.ListChanged)
	res = c.Call(t, "fx.echo", nil)
	if !res.IsError || !strings.HasPrefix(mcptest.Text(res), "machine-unreachable: ") {
		t.Errorf("echo with the environment gone: %q", mcptest.Text(res))
	}

	// The other header works too; both sessions count.
	c2 := connectHTTP(t, p, http.Header{"X-Tensorviz-Token": {testToken}})
	c2.List(t)
	if got := w.metric("airlock_mcp_sessions", "transport", "http"); got < 2 {
		t.Errorf("airlock_mcp_sessions{http} = %v", got)
	}
	// MCP calls count like any call (waitServing made some too).
	if got := w.metric("airlock_tool_calls_total", "descriptor", "fx", "tool", "trap", "outcome", "exec-threw"); got != 1 {
		t.Errorf("tool_calls{fx,trap,exec-threw} = %v", got)
	}
	if got := w.metric("airlock_mcp_requests_total", "method", "tools-call", "outcome", "refused"); got != 2 {
		t.Errorf("mcp_requests{tools/call,refused} = %v", got)
	}
}

func TestMCPHTTPInertWithoutToken(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--no-builtin"}})
	if status, _, _ := p.do("POST", "/mcp", map[string]string{"Authorization": "Bearer " + testToken}, []byte(`{}`)); status != 404 {
		t.Errorf("inert /mcp: %d", status)
	}
}

// TestMCPHTTPPage: a page executor's tool is listed while it is connected
// and called through /mcp; once the page leaves it is still listed, at
// executor page, and refused no-page (PROTOCOL section 6.4); each change
// is announced.
func TestMCPHTTPPage(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_LOOPBACK_AUTH=0") // the page check is Origin only
	c := connectHTTP(t, w.broker, http.Header{"X-Tensorviz-Token": {testToken}})
	page := w.dialChannel("/local/channel", http.Header{"Origin": {"http://127.0.0.1:" + portOf(w.broker.URL())}})
	d := wire.Descriptor{DescriptorID: "pg", Bounds: w.bounds,
		Tools: []wire.Tool{{Name: "page_tool", Description: "a page tool", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	page.send(wire.CatalogFrame([]wire.Descriptor{d}))
	c.Wait(t, mcptest.ListChanged)
	testkit.Eventually(t, "the page tool to be listed", func() bool { return c.List(t)["page_tool"] != nil })
	if ex := c.List(t)["page_tool"].Meta["executor"]; ex != "page" {
		t.Errorf("executor %v", ex)
	}
	answered := make(chan string, 1)
	go func() {
		res, err := c.CallTool(context.Background(), &sdk.CallToolParams{Name: "page_tool", Arguments: map[string]any{"q": 1}})
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- mcptest.Text(res)
	}()
	call := page.nextCall()
	if call.DescriptorID != "pg" || call.Tool != "page_tool" || string(call.Args) != `{"q":1}` {
		t.Errorf("the page got %+v", call)
	}
	page.send(wire.AnswerFrame(wire.Observed(call.CallID, json.RawMessage(`{"from":"page"}`), nil)))
	if got := testkit.Receive(t, "page_tool to be answered", answered); got != `{"from":"page"}` {
		t.Errorf("page_tool answered %q", got)
	}
	c.Forget()
	_ = page.conn.CloseNow()
	c.Wait(t, mcptest.ListChanged)
	testkit.Eventually(t, "the page peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })
	if tool := c.List(t)["page_tool"]; tool == nil || tool.Meta["executor"] != "page" {
		t.Errorf("the departed page's tool as listed: %+v", tool)
	}
	if res := c.Call(t, "page_tool", map[string]any{"q": 2}); !res.IsError || !strings.HasPrefix(mcptest.Text(res), "no-page: ") {
		t.Errorf("page_tool after the page left: %s", mcptest.Text(res))
	}
}
