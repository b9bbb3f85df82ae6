package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

const (
	loopCall  = `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"loop","arguments":{},"_meta":{"progressToken":"p20"}}}`
	cancelled = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":20,"reason":"the user gave up"}}`
	// dropLog is what the transport logs when it holds back the answer
	// to a cancelled request.
	dropLog = `"msg":"mcp: a cancelled request is not answered"`
)

// TestMCPStdioCancelledCallNotAnswered: after notifications/cancelled
// the running module is stopped, the call is never answered (MCP's
// cancellation rule), the executor logs it as cancelled (not a tool
// failure), and the session goes on.
func TestMCPStdioCancelledCallNotAnswered(t *testing.T) {
	t.Parallel()
	r := startRawMCP(t)
	r.send(loopCall)
	for m := r.next(); m["method"] != "notifications/progress"; m = r.next() {
	}
	r.send(cancelled)
	deadline := time.After(time.Minute)
	for !logged(r.stderr.String(), dropLog) {
		select {
		case line := <-r.lines:
			if strings.Contains(line, `"id":20`) {
				t.Fatalf("the cancelled call was answered: %s", line)
			}
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("the transport did not hold back the answer to the cancelled call within a minute")
		}
	}
	r.send(`{"jsonrpc":"2.0","id":21,"method":"ping"}`)
	if m := r.response(); m["id"] != float64(21) {
		t.Fatalf("after the cancel: %v, want the ping's answer", m)
	}
	stderr := r.stderr.String()
	if !logged(stderr, `"msg":"call cancelled"`, `"tool":"loop"`) || logged(stderr, `"msg":"call refused"`, `"tool":"loop"`) {
		t.Errorf("the stopped module is not logged as cancelled:\n%s", tail(stderr, 4000))
	}
}

// TestMCPHTTPCancelledCallNotAnswered: the same on /mcp: the call's
// stream ends without its answer once the cancel arrives in another
// POST, and the call counts as cancelled, never exec-threw.
func TestMCPHTTPCancelledCallNotAnswered(t *testing.T) {
	t.Parallel()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "loop"), testkit.Fixture(t, "guest.wasm")))
	p := startServe(t, procOptions{Args: []string{"--plugins", plugDir, "--no-builtin", "--log-level", "debug"}, Env: tokenEnv(), Secrets: []string{testToken}})
	s := openHTTPSession(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", p.URL()+"/mcp", bytes.NewReader([]byte(loopCall)))
	for k, v := range map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": s.id} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() (string, bool) {
		select {
		case line, ok := <-lines:
			return line, ok
		case <-ctx.Done():
			t.Fatal("the call's stream did not end within two minutes")
			return "", false
		}
	}
	for line, ok := next(); !strings.Contains(line, "notifications/progress"); line, ok = next() {
		if !ok {
			t.Fatal("the call's stream ended before any progress")
		}
	}
	if status, data, _ := s.post(cancelled); status != 202 {
		t.Fatalf("notifications/cancelled: %d %s", status, data)
	}
	for line, ok := next(); ok; line, ok = next() {
		if strings.Contains(line, `"id":20`) {
			t.Fatalf("the cancelled call was answered: %s", line)
		}
	}
	exposition := scrape(t, p)
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{`descriptor="fx"`, `tool="loop"`, `outcome="cancelled"`}, 1},
		{[]string{`descriptor="fx"`, `tool="loop"`, `outcome="exec-threw"`}, 0},
	} {
		if got := metricValue(exposition, "airlock_tool_calls_total", c.labels...); got != c.want {
			t.Errorf("tool_calls%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := metricValue(exposition, "airlock_mcp_requests_total", `method="tools-call"`, `outcome="cancelled"`); got != 1 {
		t.Errorf("mcp_requests{tools-call,cancelled} = %v, want 1", got)
	}
}
