package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/broker/v1client"
)

// BenchmarkMCPReadNotes times one read_notes call of the bundled notes
// tool four ways in one run: POST /v1/calls on `airlock serve` (the
// baseline), tools/call to `airlock mcp` over its stdio (its own embedded
// broker) with the SDK's client, tools/call over the same broker's /mcp,
// and tools/call to a second `airlock mcp` with a minimal line client
// (mcptest.Lines: what the server side costs without the SDK's client),
// and reports each one's time per call and the ratios to /v1. Run without
// -race (see cmd/airlock/PERFORMANCE.md for the figures).
func BenchmarkMCPReadNotes(b *testing.B) {
	notes := b.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "a.md"), []byte("hello\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "AIRLOCK_EXEC_CACHE_DIR=" + cacheDir, "TENSORVIZ_LOCAL_TOKEN=" + testToken}
	serve := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--root", "notes="+notes, "--data", b.TempDir(), "--log-level", "error")
	serve.Env = env
	out, err := serve.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = serve.Process.Signal(syscall.SIGTERM); _ = serve.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	var ev struct{ Addr string }
	if err != nil || json.Unmarshal([]byte(line), &ev) != nil {
		b.Fatalf("no listening line: %q %v", line, err)
	}
	base := "http://" + ev.Addr
	ctx := context.Background()
	args := json.RawMessage(`{"path":"a.md"}`)

	v1 := &v1client.Client{Base: base, Token: testToken, HTTP: &http.Client{}}
	ds, err := v1.Tools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(binPath, "mcp", "--root", "notes="+notes, "--data", b.TempDir(), "--log-level", "error")
	cmd.Env = env
	stdio, err := mcptest.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer stdio.Close()
	lines, stopLines := startLines(b, env, notes)
	defer stopLines()
	hc := &http.Client{Transport: headerTransport{http.Header{"Authorization": {"Bearer " + testToken}}, http.DefaultTransport}}
	overHTTP, err := mcptest.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true})
	if err != nil {
		b.Fatal(err)
	}
	defer overHTTP.Close()
	params := &sdk.CallToolParams{Name: "read_notes", Arguments: args}
	mcpCall := func(c *mcptest.Client) {
		if res, err := c.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatalf("%v %v", mcptest.Text(res), err)
		}
	}
	// The four are interleaved, one call each per iteration, so that a
	// change in the machine's load weighs on all of them alike. Each
	// call's time is kept too, for the medians.
	var took [4]time.Duration
	var each [4][]time.Duration
	lap := func(i int, start time.Time) {
		d := time.Since(start)
		took[i] += d
		each[i] = append(each[i], d)
	}
	for b.Loop() {
		start := time.Now()
		call, err := v1client.NewCall(ds, "read_notes", "", args)
		if err != nil {
			b.Fatal(err)
		}
		if a, _, err := v1.Call(ctx, call); err != nil || !a.OK {
			b.Fatalf("%+v %v", a, err)
		}
		lap(0, start)
		start = time.Now()
		mcpCall(stdio)
		lap(1, start)
		start = time.Now()
		mcpCall(overHTTP)
		lap(2, start)
		start = time.Now()
		if _, err := lines.Call("read_notes", args); err != nil {
			b.Fatal(err)
		}
		lap(3, start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Microseconds())/n, "v1-µs/call")
	b.ReportMetric(float64(took[1].Microseconds())/n, "mcp-stdio-µs/call")
	b.ReportMetric(float64(took[2].Microseconds())/n, "mcp-http-µs/call")
	b.ReportMetric(float64(took[3].Microseconds())/n, "mcp-stdio-lines-µs/call")
	b.ReportMetric(float64(took[1])/float64(took[0]), "stdio/v1")
	b.ReportMetric(float64(took[2])/float64(took[0]), "http/v1")
	b.ReportMetric(float64(took[3])/float64(took[0]), "stdio-lines/v1")
	// Medians, as the performance document's other rows are read: one slow call (a GC,
	// a neighbour) moves a mean by more than the difference measured.
	p50 := func(xs []time.Duration) float64 {
		slices.Sort(xs)
		return float64(xs[len(xs)/2])
	}
	b.ReportMetric(p50(each[1])/p50(each[0]), "stdio/v1-p50")
	b.ReportMetric(p50(each[3])/p50(each[0]), "stdio-lines/v1-p50")
}

// startLines starts `airlock mcp` on pipes with a line client, initialized.
func startLines(b *testing.B, env []string, notes string) (*mcptest.Lines, func()) {
	cmd := exec.Command(binPath, "mcp", "--root", "notes="+notes, "--data", b.TempDir(), "--log-level", "error")
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { _ = in.Close(); _ = cmd.Wait() }
	lines := mcptest.NewLines(in, out)
	if err := lines.Initialize(); err != nil {
		stop()
		b.Fatal(err)
	}
	return lines, stop
}
