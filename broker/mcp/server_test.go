package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// source is a calls.Source whose routes a test can change.
type source struct {
	mu     sync.Mutex
	routes []calls.Route
}

func (s *source) set(rs ...calls.Route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = rs
}

func (s *source) Lookup(id string) (calls.Route, bool) {
	for _, r := range s.Routes() {
		if r.Descriptor.DescriptorID == id {
			return r, true
		}
	}
	return calls.Route{}, false
}

func (s *source) Routes() []calls.Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routes
}

func route(id string, to wire.Executor, hosts []string, tools ...string) calls.Route {
	d := &wire.Descriptor{DescriptorID: id, Bounds: wire.Bounds{TimeoutMs: 1000, MemoryMiB: 16, MaxOutputBytes: 1024, MaxRequests: 2, AllowedHosts: hosts}}
	for _, t := range tools {
		d.Tools = append(d.Tools, wire.Tool{Name: t, Description: "does " + t,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)})
	}
	return calls.Route{Descriptor: d, Executor: "local", To: to}
}

// echo answers with its args as observed, after checking the envelope the
// server built.
var echo = wire.ExecutorFunc(func(_ context.Context, c wire.Call) wire.Answer {
	if c.DescriptorID == "" || len(c.BoundsEcho) == 0 || !strings.HasPrefix(c.CallID, "mcp_") {
		return wire.Refuse(c.CallID, wire.Malformed, nil)
	}
	return wire.Observed(c.CallID, c.Args, &wire.Budget{RequestsLimit: 2})
})

var refuse = wire.ExecutorFunc(func(_ context.Context, c wire.Call) wire.Answer {
	return wire.Refuse(c.CallID, wire.HostNotAllowed, &wire.Budget{RequestsUsed: 1, RequestsLimit: 2})
})

type fixture struct {
	src  *source
	reg  *metrics.Registry
	srv  *Server
	cs   *mcptest.Client
	logs *lockedBuffer // the server's log, JSON lines
}

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func start(t *testing.T, routes ...calls.Route) *fixture {
	t.Helper()
	return startAt(t, mcptest.Revision, routes...)
}

// startAt is start with a client speaking revision.
func startAt(t *testing.T, revision string, routes ...calls.Route) *fixture {
	t.Helper()
	f := &fixture{src: &source{}, reg: metrics.New(), logs: &lockedBuffer{}}
	f.src.set(routes...)
	logger := slog.New(slog.NewJSONHandler(f.logs, nil))
	router := calls.NewRouter(f.reg, logger, f.src)
	f.srv = New(Options{Backend: Router(router), Transport: "stdio", Metrics: f.reg, Logger: logger,
		ProgressEvery: 20 * time.Millisecond})
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.srv.Run(ctx, st) }()
	cs, err := mcptest.ConnectAt(context.Background(), ct, revision)
	if err != nil {
		t.Fatal(err)
	}
	f.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-served
		f.srv.Close()
	})
	return f
}

func TestListNamesAndAnnotations(t *testing.T) {
	f := start(t,
		route("notes", echo, nil, "read_notes", "search"),
		route("web", echo, []string{"example.com"}, "fetch_url", "search"))
	if caps := f.cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Fatalf("capabilities %+v", caps)
	}
	tools := f.cs.List(t)
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	for _, want := range []string{"read_notes", "fetch_url", "notes.search", "web.search"} {
		if tools[want] == nil {
			t.Fatalf("no %s in %v", want, names)
		}
	}
	if len(tools) != 4 {
		t.Fatalf("tools %v", names)
	}
	rn := tools["read_notes"]
	if rn.Description != "does read_notes" || !rn.Annotations.ReadOnlyHint || rn.Annotations.OpenWorldHint == nil || *rn.Annotations.OpenWorldHint {
		t.Errorf("read_notes %+v %+v", rn, rn.Annotations)
	}
	if fu := tools["fetch_url"]; !*fu.Annotations.OpenWorldHint {
		t.Error("fetch_url is not open-world")
	}
	if rn.Meta["descriptorId"] != "notes" || rn.Meta["executor"] != "local" || rn.Meta["bounds"] == nil {
		t.Errorf("_meta %v", rn.Meta)
	}
	schema, _ := json.Marshal(rn.InputSchema)
	if !strings.Contains(string(schema), `"path"`) {
		t.Errorf("inputSchema %s", schema)
	}
}

func TestEmptyCatalogStillDeclaresTools(t *testing.T) {
	f := start(t)
	if caps := f.cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Fatalf("capabilities %+v", caps)
	}
	if tools := f.cs.List(t); len(tools) != 0 {
		t.Fatalf("tools %v", tools)
	}
}

func TestCallOkAndRefused(t *testing.T) {
	f := start(t, route("notes", echo, nil, "read_notes"), route("web", refuse, nil, "fetch_url"))
	ctx := context.Background()
	res, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_notes", Arguments: map[string]any{"path": "a.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result %+v", res)
	}
	if text := mcptest.Text(res); text != `{"path":"a.md"}` {
		t.Errorf("text %s", text)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"path":"a.md"}` {
		t.Errorf("structuredContent %s", sc)
	}

	res, err = f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "fetch_url"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || mcptest.Text(res) != "host-not-allowed: "+wire.HostNotAllowed.Why() {
		t.Fatalf("refusal %+v", res)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	want := `{"budget":{"requestsLimit":2,"requestsUsed":1},"refused":"host-not-allowed","why":"` + wire.HostNotAllowed.Why() + `"}`
	if string(sc) != want {
		t.Errorf("structuredContent %s, want %s", sc, want)
	}
	for labels, want := range map[[3]string]float64{
		{"notes", "read_notes", "ok"}:            1,
		{"web", "fetch_url", "host-not-allowed"}: 1,
	} {
		if got := testutil.ToFloat64(f.reg.ToolCalls.WithLabelValues(labels[:]...)); got != want {
			t.Errorf("tool_calls%v = %v", labels, got)
		}
	}
	if got := testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("tools-call", "refused")); got != 1 {
		t.Errorf("mcp_requests{tools/call,refused} = %v", got)
	}
	if got := testutil.ToFloat64(f.reg.MCPSessions.WithLabelValues("stdio")); got != 1 {
		t.Errorf("mcp_sessions{stdio} = %v", got)
	}
}

func TestProtocolErrors(t *testing.T) {
	f := start(t, route("notes", echo, nil, "read_notes"))
	ctx := context.Background()
	if _, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope"}); err == nil {
		t.Error("an unknown tool is not a JSON-RPC error")
	}
	for _, args := range []string{`[1]`, `"x"`, `3`} {
		if _, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_notes", Arguments: json.RawMessage(args)}); err == nil {
			t.Errorf("arguments %s are not a JSON-RPC error", args)
		}
	}
	// Duplicate keys are an object, refused as POST /v1/calls refuses them.
	res, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_notes", Arguments: json.RawMessage(`{"a":1,"A":2}`)})
	if err != nil || !res.IsError || !strings.HasPrefix(mcptest.Text(res), "malformed: ") {
		t.Errorf("duplicate keys: %+v %v", res, err)
	}
	if got := testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("tools-call", "error")); got != 4 {
		t.Errorf("mcp_requests{tools/call,error} = %v", got)
	}
}

func TestListChanged(t *testing.T) {
	f := start(t, route("notes", echo, nil, "read_notes"))
	f.cs.List(t)
	f.src.set(route("notes", echo, nil, "read_notes"), route("web", echo, nil, "fetch_url"))
	f.srv.Changed()
	f.cs.Wait(t, mcptest.ListChanged)
	if tools := f.cs.List(t); tools["fetch_url"] == nil {
		t.Fatalf("fetch_url not listed: %v", tools)
	}
	// A change that leaves the list as it was (a page came and went) is
	// still announced.
	f.srv.Changed()
	f.cs.Wait(t, mcptest.ListChanged)
	f.src.set()
	f.srv.Changed()
	f.cs.Wait(t, mcptest.ListChanged)
	if tools := f.cs.List(t); len(tools) != 0 {
		t.Fatalf("tools left: %v", tools)
	}
}

// TestCancelAndProgress: a call that asked for progress gets it while it
// runs; notifications/cancelled stops it, and it counts as cancelled in
// both metrics. Every wait fails within the kit's patience.
func TestCancelAndProgress(t *testing.T) {
	started := make(chan struct{}, 1)
	block := wire.ExecutorFunc(func(ctx context.Context, c wire.Call) wire.Answer {
		started <- struct{}{}
		<-ctx.Done()
		return wire.Refuse(c.CallID, wire.Cancelled, nil)
	})
	f := start(t, route("slow", block, nil, "spin"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &sdk.CallToolParams{Name: "spin"}
	params.SetProgressToken("p1")
	done := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(ctx, params)
		done <- err
	}()
	testkit.Receive(t, "the call to start", started)
	f.cs.Wait(t, mcptest.Progress)
	cancel() // the client sends notifications/cancelled
	if err := testkit.Receive(t, "the cancelled call to return", done); err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	testkit.Eventually(t, "the cancelled call to be counted cancelled", func() bool {
		return testutil.ToFloat64(f.reg.ToolCalls.WithLabelValues("slow", "spin", metrics.Cancelled)) == 1 &&
			testutil.ToFloat64(f.reg.MCPRequests.WithLabelValues("tools-call", metrics.Cancelled)) == 1
	})
}

func TestEntries(t *testing.T) {
	long := strings.Repeat("a", 64)
	local := func(id string, tools ...string) wire.Descriptor {
		d := wire.Descriptor{DescriptorID: id, Executor: calls.LocalExecutor}
		for _, n := range tools {
			d.Tools = append(d.Tools, wire.Tool{Name: n})
		}
		return d
	}
	peer := func(executor, id string, tools ...string) wire.Descriptor {
		d := local(id, tools...)
		d.Executor = executor
		return d
	}
	ds := []wire.Descriptor{
		local("a", "x", "solo"),
		local("b", "x"),
		local(long, "y"),
		local(strings.Repeat("c", 64), "y"),
		local("d", long),
		local(strings.Repeat("e", 64), long),
		// A peer never takes a local tool's name, whatever the order.
		peer("page", "pg", "solo", "x", "z"),
		peer("machine:lab", "lab", "z", "w"),
		peer("machine:lab", strings.Repeat("f", 64), long),
		local("web", "fetch_url"),
		peer("page", "pg2", "fetch_url"),
	}
	got, left := entries(ds)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	want := map[string]string{
		"a.x": "a", "b.x": "b", "solo": "a", long + ".y": long, strings.Repeat("c", 64) + ".y": strings.Repeat("c", 64),
		"d." + long: "d", "pg.solo": "pg", "pg.x": "pg", "pg.z": "pg", "lab.z": "lab", "w": "lab",
		"fetch_url": "web", "pg2.fetch_url": "pg2",
	}
	for name, desc := range want {
		if got[name] == nil || got[name].descriptor != desc {
			t.Errorf("%s not listed as %s's: %v", name, desc, names)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listed %v", names)
	}
	collided := 0
	for _, e := range got {
		if e.collided {
			collided++
		}
	}
	// pg.solo, pg.x, pg.z, lab.z, pg2.fetch_url; the local a.x and b.x
	// collide with each other, not with a peer.
	if collided != 5 {
		t.Errorf("%d entries collided, want 5", collided)
	}
	// e…e.<long> (local, too long) and f…f.<long> (a peer, too long
	// because of a local tool) are left out.
	var peers int
	for _, sk := range left {
		if sk.peer {
			peers++
		}
	}
	if len(left) != 2 || peers != 1 {
		t.Errorf("left %v", left)
	}
	for _, name := range []string{"", "a b", "é", strings.Repeat("a", 129)} {
		if ValidName(name) {
			t.Errorf("%q is valid", name)
		}
	}
}

// TestPeerToolCollisionsCounted: a peer's tool qualified, or left out,
// because a local tool has its name is counted once, when it happens.
func TestPeerToolCollisionsCounted(t *testing.T) {
	long := strings.Repeat("f", 64)
	page := func(id string, tools ...string) calls.Route {
		r := route(id, echo, nil, tools...)
		r.Executor = "page"
		return r
	}
	f := start(t, route("web", echo, nil, "fetch_url", long))
	f.src.set(route("web", echo, nil, "fetch_url", long), page("pg", "fetch_url", "other"), page(long, long))
	f.srv.Changed()
	f.cs.Wait(t, mcptest.ListChanged)
	tools := f.cs.List(t)
	f.cs.List(t) // a second sync counts nothing again
	if tools["fetch_url"] == nil || tools["fetch_url"].Meta["descriptorId"] != "web" || tools["pg.fetch_url"] == nil || tools["other"] == nil {
		t.Fatalf("tools %v", tools)
	}
	if tools[long] == nil || tools[long].Meta["descriptorId"] != "web" {
		t.Errorf("the local %s is not listed under its name", long)
	}
	for outcome, want := range map[string]float64{"qualified": 1, "dropped": 1} {
		if got := testutil.ToFloat64(f.reg.MCPToolCollisions.WithLabelValues(outcome)); got != want {
			t.Errorf("mcp_tool_collisions{%s} = %v, want %v", outcome, got, want)
		}
	}
}

// TestRenameLoggedOnce: a plugin declaring a tool another plugin has is
// listed qualified, and the broker's log says so at warn, naming both
// plugins and the name agents call it by, once: not again at a resync
// that changes nothing, again when a third plugin joins.
func TestRenameLoggedOnce(t *testing.T) {
	f := start(t, route("a", echo, nil, "x"), route("b", echo, nil, "x"))
	tools := f.cs.List(t)
	if tools["a.x"] == nil || tools["b.x"] == nil || tools["x"] != nil {
		t.Fatalf("tools %v", tools)
	}
	f.srv.Changed()
	f.cs.List(t) // a resync that changes nothing logs nothing
	var renames []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(fmt.Sprint(rec["msg"]), "mcp: tool renamed") {
			renames = append(renames, rec)
		}
	}
	want := map[string]string{"a.x": "b", "b.x": "a"}
	if len(renames) != 2 {
		t.Fatalf("%d rename lines, want 2:\n%s", len(renames), f.logs.String())
	}
	for _, rec := range renames {
		name := fmt.Sprint(rec["mcp_name"])
		if rec["level"] != "WARN" || rec["tool"] != "x" || rec["also_declared_by"] != want[name] || name != fmt.Sprint(rec["plugin"])+".x" {
			t.Errorf("rename line %v", rec)
		}
	}
}

func TestObjectSchema(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"object"}`:          `{"type":"object"}`,
		`{}`:                         `{"type":"object"}`,
		`{"type":["object","null"]}`: `{"type":"object"}`,
		`{"properties":{"a":{}}}`:    `{"properties":{"a":{}},"type":"object"}`,
		`{"type":"string"}`:          "error",
		`{"type":["string","null"]}`: "error",
	} {
		got, err := objectSchema(json.RawMessage(in))
		s := string(got)
		if err != nil {
			s = "error"
		}
		if s != want {
			t.Errorf("objectSchema(%s) = %s, want %s", in, s, want)
		}
	}
}
