package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// stdioServer serves read_notes (the echo executor) over a stdio session
// on pipes: the client writes to in and reads out; served reports how the
// session ended.
func stdioServer() (srv *Server, reg *metrics.Registry, in *io.PipeWriter, out *io.PipeReader, served chan error) {
	src := &source{}
	src.set(route("notes", echo, nil, "read_notes"))
	reg = metrics.New()
	srv = New(Options{Backend: Router(calls.NewRouter(reg, nil, src)), Transport: "stdio", Metrics: reg})
	inR, in := io.Pipe()
	out, outW := io.Pipe()
	served = make(chan error, 1)
	go func() { served <- srv.Run(context.Background(), srv.Stdio(inR, outW)) }()
	return srv, reg, in, out, served
}

// TestStdioMalformedLines: every malformed line is answered with a
// JSON-RPC error and the session goes on.
func TestStdioMalformedLines(t *testing.T) {
	srv, reg, inW, outR, served := stdioServer()
	defer srv.Close()
	lines := bufio.NewReader(outR)
	next := func() map[string]any {
		t.Helper()
		line, err := lines.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not JSON on stdout: %q", line)
		}
		return m
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	for in, want := range map[string]string{
		`not json`:        `-32700 <nil>`,
		`{"a":1} {"b":2}`: `-32700 <nil>`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`: `-32600 <nil>`,
		`{"jsonrpc":"1.0","id":7,"method":"ping"}`:   `-32600 7`,
		`{"jsonrpc":"2.0","id":"x","method":5}`:      `-32600 x`,
		`"just a string"`:                            `-32600 <nil>`,
		// A duplicate key, exact or case-folded, at any depth: one reader
		// would take the first, another the last.
		`{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}`:                                                            `-32600 <nil>`,
		`{"jsonrpc":"2.0","id":7,"method":"ping","Method":"tools/list"}`:                                             `-32600 <nil>`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","Name":"b"}}`:                            `-32600 <nil>`,
		`{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":[{"k":1,"k":2}]}}`:                                       `-32600 <nil>`,
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"\xff\"}":                                                         `-32700 <nil>`,
		`{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`: `-32600 <nil>`,
	} {
		send(in)
		m := next()
		e, _ := m["error"].(map[string]any)
		code, _ := e["code"].(float64)
		if got := fmt.Sprintf("%d %v", int(code), m["id"]); got != want {
			t.Errorf("%s: got %s, want %s (%v)", in, got, want, m)
		}
	}
	send(`   `) // blank lines are skipped
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize after malformed lines: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":5}`)
	if m := next(); m["error"] == nil {
		t.Errorf("params not an object: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := next(); !strings.Contains(jsonString(m), "read_notes") {
		t.Errorf("tools/list: %v", m)
	}
	if got := testutil.ToFloat64(reg.MCPRequests.WithLabelValues(metrics.Other, "error")); got != 12 {
		t.Errorf("malformed lines counted %v", got)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("session ended with %v", err)
	}
	outR.Close()
}

func jsonString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestReadLineBound(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader(strings.Repeat("a", 100)+"\nok\n"), 16)
	line, over, err := readLine(br, 50)
	if !over || line != nil || err != nil {
		t.Fatalf("long line: %q %v %v", line, over, err)
	}
	line, over, err = readLine(br, 50)
	if over || string(line) != "ok" || err != nil {
		t.Fatalf("next line: %q %v %v", line, over, err)
	}
}

// FuzzDecode: a line is either a message (the SDK decodes it) or answered
// with a JSON-RPC error response, never both, never a crash; a message is
// one the strict walk passes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `not json`, `[1]`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}`, `{"jsonrpc":"2.0","id":1.5,"method":""}`,
		`{"jsonrpc":"2.0","JSONRPC":"1.0","method":"m","method":"n"}`, `{"jsonrpc":"2.0","id":null,"method":null,"params":null}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"\xfe\\ud800\"}", `{"jsonrpc":"2.0","id":1e400,"method":"x"}`, `{"jsonrpc":"2.0","id":-0,"method":"x","params":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || bytes.ContainsRune(line, '\n') {
			return
		}
		msg, r := decode(line, false)
		if (msg == nil) == (r == nil) {
			t.Fatalf("decode(%q) = %v, %q", line, msg, r)
		}
		// Only a message the strict walk passes is handed on.
		if msg != nil && wire.Walk(line, maxMessageDepth) != nil {
			t.Fatalf("decode(%q) handed on a message the strict walk refuses", line)
		}
		// The fast path reads a request exactly as the SDK's codec does.
		if req, ok := decodeRequest(line); ok {
			sdkMsg, err := jsonrpc.DecodeMessage(line)
			want, _ := sdkMsg.(*jsonrpc.Request)
			if err != nil || want == nil || want.ID != req.ID || want.Method != req.Method || !bytes.Equal(want.Params, req.Params) {
				t.Fatalf("decodeRequest(%q) = %+v, the SDK reads %+v (%v)", line, req, sdkMsg, err)
			}
		}
		if r == nil {
			return
		}
		var resp struct {
			V     string          `json:"jsonrpc"`
			ID    json.RawMessage `json:"id"`
			Error *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(r, &resp); err != nil || resp.V != "2.0" || resp.ID == nil || resp.Error == nil || resp.Error.Code == 0 {
			t.Fatalf("reply %q is not an error response: %v", r, err)
		}
	})
}

// BenchmarkStdioCall is one tools/call over the stdio transport with the
// SDK's client, against an executor that answers at once: what MCP itself
// costs per call in time and garbage (the SDK's codec allocates a 32 KiB
// buffer per value it unmarshals, on both sides).
func BenchmarkStdioCall(b *testing.B) {
	srv, _, inW, outR, _ := stdioServer()
	defer srv.Close()
	ctx := context.Background()
	c, err := mcptest.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	params := &sdk.CallToolParams{Name: "read_notes", Arguments: json.RawMessage(`{"path":"a.md"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := c.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	_ = inW.Close()
}

// BenchmarkStdioCallLines is BenchmarkStdioCall with a minimal client
// (mcptest.Lines: a request line out, a response line in, decoded with
// encoding/json) instead of the SDK's: what the server side alone costs.
func BenchmarkStdioCallLines(b *testing.B) { benchLines(b, (*mcptest.Lines).Initialize) }

// benchLines times read_notes calls of a minimal client that start
// opened.
func benchLines(b *testing.B, start func(*mcptest.Lines) error) {
	srv, _, inW, outR, served := stdioServer()
	defer srv.Close()
	c := mcptest.NewLines(inW, outR)
	if err := start(c); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"path":"a.md"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Call("read_notes", args); err != nil {
			b.Fatal(err)
		}
	}
	_ = inW.Close()
	<-served
	_ = outR.Close()
}

// FuzzEncode: a response written directly reads byte for byte as the
// SDK's codec writes it.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{`{}`, `{"content":[{"type":"text","text":"{\"a\":\"<b>&\"}"}],"structuredContent":{"a":"<b>&"}}`, `[1,2]`, `"\u2028"`, `null`} {
		f.Add(int64(1), []byte(s))
		f.Add(int64(-1<<63), []byte(s))
	}
	f.Fuzz(func(t *testing.T, id int64, result []byte) {
		// The SDK hands Write a result its encoder produced: compact.
		var compact bytes.Buffer
		if json.Compact(&compact, result) != nil {
			return
		}
		for _, msg := range []jsonrpc.Message{
			&jsonrpc.Response{ID: mustID(t, float64(id)), Result: compact.Bytes()},
			&jsonrpc.Response{ID: mustID(t, string(result)), Result: compact.Bytes()},
			&jsonrpc.Response{ID: mustID(t, float64(id)), Error: &jsonrpc.Error{Code: 1, Message: string(result)}},
		} {
			want, err := jsonrpc.EncodeMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendMessage([]byte("x"), msg)
			if err != nil || string(got) != "x"+string(want)+"\n" {
				t.Fatalf("appendMessage = %q, %v; the SDK writes %q", got, err, want)
			}
		}
	})
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// BenchmarkStdioCallStateless is BenchmarkStdioCall at 2026-07-28: the
// SDK's client discovers instead of initializing and writes the revision
// and its capabilities into every request's _meta.
func BenchmarkStdioCallStateless(b *testing.B) {
	srv, _, inW, outR, _ := stdioServer()
	defer srv.Close()
	ctx := context.Background()
	c, err := mcptest.ConnectAt(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, mcptest.Stateless)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchSDKCalls(b, c)
	_ = inW.Close()
}

// BenchmarkStdioCallLinesStateless is BenchmarkStdioCallLines at
// 2026-07-28 (server/discover, then _meta in every request): what the
// server side alone costs at that revision.
func BenchmarkStdioCallLinesStateless(b *testing.B) { benchLines(b, (*mcptest.Lines).Discover) }
