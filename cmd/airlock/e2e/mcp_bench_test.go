package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/broker/v1client"
)

// BenchmarkMCPReadNotes times one read_notes call of the bundled notes
// tool every way an agent can make it, in one run: POST /v1/calls on
// `airlock serve` (the baseline); tools/call over `airlock mcp`'s stdio
// with the SDK's client at each protocol revision (an `airlock mcp` of
// its own for each); tools/call over the same broker's /mcp in a session
// (2025-11-25) and stateless (2026-07-28); and tools/call to one more
// `airlock mcp` with a minimal line client (mcptest.Lines), at 2025-11-25
// and at 2026-07-28, and stateless tools/call on /mcp with a plain HTTP
// client posting the request's bytes: what the server side costs without
// the SDK's client. It reports each way's
// mean time per call and the ratio of its median call to /v1's. Run
// without -race (see cmd/airlock/PERFORMANCE.md for the figures).
func BenchmarkMCPReadNotes(b *testing.B) {
	runWays(b, mcpWays(b))
}

// BenchmarkMCPPairs makes each way of BenchmarkMCPReadNotes but /v1 in a
// sub-benchmark of its own, interleaved with /v1 alone: two processes
// take turns, so neither waits for a dozen others between its calls, as
// in BenchmarkMCPReadNotes, where every call starts cold. Each reports
// its way's median ratio to /v1's. Run without -race.
func BenchmarkMCPPairs(b *testing.B) {
	ways := mcpWays(b)
	for _, w := range ways[1:] {
		b.Run(w.name, func(b *testing.B) {
			runWays(b, []benchWay{{name: ways[0].name, call: ways[0].call}, {name: w.name, call: w.call}})
		})
	}
}

// mcpWays starts a broker and one `airlock mcp` per stdio way, and
// returns BenchmarkMCPReadNotes's ways, /v1 first.
func mcpWays(b *testing.B) []benchWay {
	notes, env, base, v1call := benchServe(b)
	ctx := context.Background()
	args := json.RawMessage(`{"path":"a.md"}`)

	// Each call gets params of its own: the SDK's client writes a
	// stateless revision's _meta into the params it is given.
	sdkCall := func(c *mcptest.Client) func() error {
		return func() error {
			res, err := c.CallTool(ctx, &sdk.CallToolParams{Name: "read_notes", Arguments: args})
			if err != nil {
				return err
			}
			if res.IsError {
				return errors.New(mcptest.Text(res))
			}
			return nil
		}
	}
	connect := func(t sdk.Transport, revision string) *mcptest.Client {
		c, err := mcptest.ConnectAt(ctx, t, revision)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	ways := []benchWay{{name: "v1", call: v1call}}
	for _, revision := range mcpRevisions {
		cmd := exec.Command(binPath, "mcp", "--root", "notes="+notes, "--data", b.TempDir(), "--log-level", "error")
		cmd.Env = env
		c := connect(&sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, revision)
		ways = append(ways, benchWay{name: "stdio-" + revision, call: sdkCall(c)})
	}
	hc := &http.Client{Transport: headerTransport{http.Header{"Authorization": {"Bearer " + testToken}}, http.DefaultTransport}}
	for _, revision := range []string{mcptest.Revision, mcptest.Stateless} {
		c := connect(&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, revision)
		ways = append(ways, benchWay{name: "http-" + revision, call: sdkCall(c)})
	}
	for _, revision := range []string{mcptest.Revision, mcptest.Stateless} {
		name := "stdio-lines"
		if revision == mcptest.Stateless {
			name += "-" + revision
		}
		ways = append(ways, benchWay{name: name, call: linesCall(b, env, notes, revision)})
	}
	post := statelessPost(b, base+"/mcp")
	return append(ways, benchWay{name: "http-raw-" + mcptest.Stateless, call: post})
}

// BenchmarkStdioFloor sets what MCP over stdio adds to a call over a pipe
// beside what /v1 adds to a call over HTTP, in one run: POST /v1/calls
// on `airlock serve`, tools/call (2025-11-25) to `airlock mcp` with the
// minimal line client, and the same read_notes without Airlock over
// loopback HTTP and over a pipe (floorWays). It reports each way's mean
// time per call, its median's ratio to /v1's, and the two floors' and the
// two doors' ratios to their own floor. It has four ways, so each
// process waits less between its calls than in BenchmarkMCPReadNotes.
func BenchmarkStdioFloor(b *testing.B) {
	notes, env, _, v1call := benchServe(b)
	ways := []benchWay{{name: "v1", call: v1call}, {name: "stdio-lines", call: linesCall(b, env, notes, mcptest.Revision)}}
	ways = append(ways, floorWays(b, notes)...)
	p50s := runWays(b, ways)
	b.ReportMetric(p50s["floor-stdio"]/p50s["floor-http"], "floor-stdio/floor-http-p50")
	b.ReportMetric(p50s["v1"]/p50s["floor-http"], "v1/floor-http-p50")
	b.ReportMetric(p50s["stdio-lines"]/p50s["floor-stdio"], "stdio-lines/floor-stdio-p50")
}

// benchServe starts `airlock serve` on the bundled defaults with a notes
// root holding one note, and returns the root, the environment its processes
// run with, the broker's base URL and one read_notes call on /v1.
func benchServe(b *testing.B) (notes string, env []string, base string, v1call func() error) {
	notes = b.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "a.md"), []byte("hello\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "AIRLOCK_EXEC_CACHE_DIR=" + cacheDir, "TENSORVIZ_LOCAL_TOKEN=" + testToken}
	serve := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--root", "notes="+notes, "--data", b.TempDir(), "--log-level", "error")
	serve.Env = env
	out, err := serve.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = serve.Process.Signal(syscall.SIGTERM); _ = serve.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var ev struct{ Addr string }
	if err != nil || json.Unmarshal([]byte(line), &ev) != nil {
		b.Fatalf("no listening line: %q %v", line, err)
	}
	base = "http://" + ev.Addr
	ctx := context.Background()
	v1 := &v1client.Client{Base: base, Token: testToken, HTTP: &http.Client{}}
	ds, err := v1.Tools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"path":"a.md"}`)
	return notes, env, base, func() error {
		call, err := v1client.NewCall(ds, "read_notes", "", args)
		if err != nil {
			return err
		}
		if a, _, err := v1.Call(ctx, call); err != nil || !a.OK {
			return fmt.Errorf("%+v %v", a, err)
		}
		return nil
	}
}

// runWays makes one call each way per iteration and reports each way's
// mean time per call and its median's ratio to the first way's (/v1); it
// returns the medians by name.
func runWays(b *testing.B, ways []benchWay) map[string]float64 {
	// The ways are interleaved, one call each per iteration, so that a
	// change in the machine's load weighs on all of them alike.
	for b.Loop() {
		for i := range ways {
			start := time.Now()
			if err := ways[i].call(); err != nil {
				b.Fatalf("%s: %v", ways[i].name, err)
			}
			ways[i].took = append(ways[i].took, time.Since(start))
		}
	}
	// Medians, as the performance document's other rows are read: one
	// slow call (a GC, a neighbour) moves a mean by more than the
	// difference measured.
	p50 := func(xs []time.Duration) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return float64(xs[len(xs)/2])
	}
	medians := map[string]float64{}
	for _, w := range ways {
		medians[w.name] = p50(w.took)
	}
	for _, w := range ways[1:] {
		b.ReportMetric(medians[w.name]/medians[ways[0].name], w.name+"/v1-p50")
	}
	for _, w := range ways {
		var sum time.Duration
		for _, d := range w.took {
			sum += d
		}
		b.ReportMetric(float64(sum.Microseconds())/float64(len(w.took)), w.name+"-µs/call")
	}
	return medians
}

// floorWays are the call without Airlock, over loopback HTTP and over a
// pipe: the same read_notes on a reused instance of plain wazero behind
// one `airlock load http-floor` process, POSTed (floor-http) and written
// as a line to its stdin (floor-stdio). Their ratio is what the pipe hop
// costs against the HTTP hop, with no MCP and no broker in either.
func floorWays(b *testing.B, notes string) []benchWay {
	url, ask := startFloor(b, "http-floor", "--baseline", "builtin:notes", "--tool", "read_notes", "--root", "notes="+notes, "--cache-dir", cacheDir)
	const envelope = `{"v":1,"callId":"f","tool":"read_notes","descriptorId":"notes","args":{"path":"a.md"},"boundsEcho":{}}`
	hc := &http.Client{}
	overHTTP := func() error {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/calls", strings.NewReader(envelope))
		req.Header.Set(contract.TokenHeader, floorSecret)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"ok":true`)) {
			return fmt.Errorf("%d %s %v", resp.StatusCode, body, err)
		}
		return nil
	}
	overPipe := func() error {
		if a, err := ask(envelope); err != nil || !strings.Contains(a, `"ok":true`) {
			return fmt.Errorf("%q %v", a, err)
		}
		return nil
	}
	return []benchWay{{name: "floor-http", call: overHTTP}, {name: "floor-stdio", call: overPipe}}
}

// benchWay is one way of making the benchmark's call, and each call's time.
type benchWay struct {
	name string
	call func() error
	took []time.Duration
}

// linesCall is one read_notes call to an `airlock mcp` of its own with
// the line client (startLines), stopped when b ends.
func linesCall(b *testing.B, env []string, notes, revision string) func() error {
	lines, stop := startLines(b, env, notes, revision)
	b.Cleanup(stop)
	args := json.RawMessage(`{"path":"a.md"}`)
	return func() error {
		_, err := lines.Call("read_notes", args)
		return err
	}
}

// startLines starts `airlock mcp` on pipes with a line client, initialized
// at revision (discovered, at mcptest.Stateless).
func startLines(b *testing.B, env []string, notes, revision string) (*mcptest.Lines, func()) {
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
	start := lines.Initialize
	if revision == mcptest.Stateless {
		start = lines.Discover
	}
	if err := start(); err != nil {
		stop()
		b.Fatal(err)
	}
	return lines, stop
}

// statelessPost is one stateless (2026-07-28) tools/call of read_notes on
// /mcp by a plain HTTP client: the request's bytes and headers as the
// SDK's client sends them, the SSE answer read to its end.
func statelessPost(b *testing.B, url string) func() error {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/protocolVersion":"` + mcptest.Stateless +
		`"},"name":"read_notes","arguments":{"path":"a.md"}}}`)
	header := http.Header{"Authorization": {"Bearer " + testToken}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {mcptest.Stateless},
		"Mcp-Method": {"tools/call"}, "Mcp-Name": {"read_notes"}}
	hc := &http.Client{}
	return func() error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header = header.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"structuredContent"`)) || bytes.Contains(data, []byte(`"isError":true`)) {
			return fmt.Errorf("%d %s %v", resp.StatusCode, data, err)
		}
		return nil
	}
}
