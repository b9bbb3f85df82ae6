// Package mcp serves the broker's admitted tools (local, page and machine)
// to agents over the Model Context Protocol (PROTOCOL section 11), on the
// official Go SDK: tools/list is the live catalog under section 11's
// names, and tools/call goes through the same router as POST /v1/calls,
// so bounds, metrics and the refusal vocabulary are those of every call.
//
// The SDK does the protocol (JSON-RPC, sessions, cancellation, the
// streamable HTTP transport); this package keeps the SDK's tool set in
// step with the catalog, maps answers to tool results, and guards /mcp.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// Backend is where the tools come from and where calls go: the broker's
// own router, or a running broker's /v1 API.
type Backend interface {
	// Descriptors lists what is admitted now, with each executor.
	Descriptors(ctx context.Context) ([]wire.Descriptor, error)
	// Call answers one call envelope; an error means no answer could be
	// had (a remote broker unreachable).
	Call(ctx context.Context, c wire.Call) (wire.Answer, error)
}

// Router is the broker's router as a Backend: calls count in its metrics
// like those of POST /v1/calls.
func Router(r *calls.Router) Backend { return routerBackend{r} }

type routerBackend struct{ r *calls.Router }

func (b routerBackend) Descriptors(context.Context) ([]wire.Descriptor, error) {
	return b.r.Descriptors(), nil
}

func (b routerBackend) Call(ctx context.Context, c wire.Call) (wire.Answer, error) {
	return b.r.Call(ctx, c), nil
}

// Protocol revisions served (PROTOCOL section 11): every one the SDK
// speaks, newest first, since agents in the wild still speak the older
// ones. 2026-07-28 is stateless (server/discover, the revision in each
// request's _meta; on /mcp, stateless.go); the others open a session at
// initialize.
var protocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Options configure a Server.
type Options struct {
	Backend Backend
	// Transport is "stdio" or "http": the label of airlock_mcp_sessions.
	Transport string
	// Version is the server version reported at initialize.
	Version string
	Logger  *slog.Logger
	Metrics *metrics.Registry
	// ProgressEvery is how often a call that asked for progress gets a
	// notifications/progress while it runs; 0 means every second.
	ProgressEvery time.Duration
	// Poll, when set, lists the catalog again at this interval: a remote
	// broker does not say when its catalog changes.
	Poll time.Duration
}

// Server is one MCP server over a Backend. It serves any number of
// sessions (Run for stdio, NewHTTP for /mcp) and notifies each of them
// when the catalog changes (Changed).
type Server struct {
	o      Options
	sdk    *sdk.Server
	prefix string // of call ids: unique per server
	seq    atomic.Uint64
	// inflight counts tool calls running, so that /mcp's Drain closes
	// the sessions only once they have answered.
	inflight atomic.Int64
	tools    atomic.Pointer[map[string]*entry] // what the SDK lists, by name
	syncMu   sync.Mutex                        // serializes sync; guards left and unlisted
	left     map[string]bool                   // the names left out by the last sync
	unlisted bool                              // the last sync could not list the catalog
	kick     chan struct{}
	stop     chan struct{}
	stopped  sync.Once
	wg       sync.WaitGroup // the sync loop and the session watchers

	sessMu   sync.Mutex
	sessions map[*sdk.ServerSession]bool // initialized and not yet closed
	closed   bool

	listenFor atomic.Int64 // how long a subscriptions/listen lasts, in ns; 0: unbounded (stateless.go)
}

// New builds a Server and lists the catalog once. Close releases it.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	o.Metrics = metrics.OrNew(o.Metrics)
	var p [6]byte
	_, _ = rand.Read(p[:])
	s := &Server{o: o, prefix: "mcp_" + hex.EncodeToString(p[:]) + "_", kick: make(chan struct{}, 1),
		stop: make(chan struct{}), sessions: map[*sdk.ServerSession]bool{}}
	s.tools.Store(&map[string]*entry{})
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "airlock", Version: o.Version}, &sdk.ServerOptions{
		// Declared even while nothing is admitted: a tool may arrive.
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
		SupportedProtocolVersions: protocolVersions,
		Logger:                    o.Logger,
	})
	s.sdk.AddReceivingMiddleware(s.observe, s.endListen)
	s.resync()
	s.wg.Add(1)
	go s.loop()
	return s
}

// Changed tells the server the catalog may have changed: it lists the
// catalog again, and every connected client gets
// notifications/tools/list_changed, even when the list reads the same (a
// page or an environment came or went). It never blocks, so a catalog or
// the channel may call it under their locks.
func (s *Server) Changed() {
	select {
	case s.kick <- struct{}{}:
	default: // a resync is already due
	}
}

// loop resyncs after each Changed until Close.
func (s *Server) loop() {
	defer s.wg.Done()
	var poll <-chan time.Time
	if s.o.Poll > 0 {
		t := time.NewTicker(s.o.Poll)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-s.stop:
			return
		case <-poll:
			s.resync()
		case <-s.kick:
			if !s.resync() {
				s.touch()
			}
		}
	}
}

// syncTimeout bounds listing the catalog outside a request: a remote
// broker that does not answer must not hold Close.
const syncTimeout = 10 * time.Second

func (s *Server) resync() bool {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	return s.sync(ctx)
}

// Run serves one session over t (stdio) until it ends or ctx does.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	err := s.sdk.Run(ctx, t)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Close stops the resync loop, closes every session and waits for what
// the server started.
func (s *Server) Close() {
	s.stopped.Do(func() { close(s.stop) })
	s.sessMu.Lock()
	s.closed = true
	s.sessMu.Unlock()
	for ss := range s.sdk.Sessions() {
		_ = ss.Close()
	}
	s.wg.Wait()
}

// sync makes the SDK's tool set the catalog's and reports whether it
// changed. Adding or removing tools makes the SDK send list_changed to
// every session (after a short debounce that merges a burst).
func (s *Server) sync(ctx context.Context) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	ds, err := s.o.Backend.Descriptors(ctx)
	if err != nil {
		// Said once when it starts failing, not at every poll: the tools
		// stay listed, and their calls are refused by name meanwhile.
		if !s.unlisted {
			s.o.Logger.Warn("mcp: the catalog could not be listed; its tools stay listed and calls are refused until it can", "err", err)
		}
		s.unlisted = true
		return false
	}
	if s.unlisted {
		s.o.Logger.Info("mcp: the catalog can be listed again")
		s.unlisted = false
	}
	next, left := entries(ds)
	s.report(next, left)
	cur := *s.tools.Load()
	var gone []string
	for name := range cur {
		if next[name] == nil {
			gone = append(gone, name)
		}
	}
	var added []*entry
	for name, e := range next {
		if old := cur[name]; old == nil || !old.same(e) {
			added = append(added, e)
		}
	}
	if len(gone) == 0 && len(added) == 0 {
		return false
	}
	for _, e := range added {
		if err := s.add(e); err != nil {
			s.o.Logger.Warn("mcp: tool not listed", "name", e.name, "why", err.Error())
			delete(next, e.name)
			if cur[e.name] != nil {
				gone = append(gone, e.name)
			}
		}
	}
	s.tools.Store(&next)
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
	return true
}

// touch sends list_changed when the list itself did not change, by
// replacing one tool with itself (the SDK notifies on every AddTool).
func (s *Server) touch() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for _, e := range *s.tools.Load() {
		_ = s.add(e)
		return
	}
}

// add lists e (or replaces its listing). The SDK panics on a schema it
// will not list; that tool is left out instead.
func (s *Server) add(e *entry) (err error) {
	schema, err := objectSchema(e.tool.InputSchema)
	if err != nil {
		return err
	}
	open := len(e.bounds.AllowedHosts) > 0
	t := &sdk.Tool{
		Name:        e.name,
		Description: e.tool.Description,
		InputSchema: schema,
		// Roots are mounted read-only, and a tool reaches the network only
		// through its allowlist.
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &open},
		Meta:        toolMeta(e),
	}
	if e.tool.OutputSchema != nil {
		// Its root says "type": "object" (wire.Descriptor.Validate), and
		// the router holds every observation to it.
		t.OutputSchema = e.tool.OutputSchema
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the MCP SDK refused the tool: %v", p)
		}
	}()
	s.sdk.AddTool(t, s.handler(e.name))
	return nil
}

// MetaPrefix starts the _meta keys the server adds under its own name (MCP
// reserves the prefixes whose second label is modelcontextprotocol or mcp,
// such as io.modelcontextprotocol/; a one-label prefix is the server's).
const MetaPrefix = "airlock/"

// toolMeta is a listed tool's _meta (PROTOCOL section 11): its
// descriptor, executor and bounds, and under MetaPrefix its executor
// again and, for a local plugin, its module's SHA-256, which the broker
// checked against plugin.json before it admitted it, and a signed
// plugin's signer ({key, verified}, PROTOCOL section 8.5) and a pulled
// one's source ({ref, digest, pulledAt}, section 8.1).
func toolMeta(e *entry) sdk.Meta {
	m := sdk.Meta{"descriptorId": e.descriptor, "executor": e.executor, "bounds": e.bounds,
		MetaPrefix + "executor": e.executor}
	if e.sha256 != "" {
		m[MetaPrefix+"sha256"] = e.sha256
	}
	if e.signer != nil {
		m[MetaPrefix+"signer"] = e.signer
	}
	if e.source != nil {
		m[MetaPrefix+"source"] = e.source
	}
	return m
}

// objectSchema is schema with "type":"object". A call's args are always
// an object, so a schema without a type (or whose types include object)
// accepts exactly what it accepted before; MCP requires the type. A
// schema that no object satisfies is an error: the tool could never run.
func objectSchema(schema json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, errors.New("inputSchema is not an object")
	}
	switch typ := string(m["type"]); {
	case typ == `"object"`:
		return schema, nil
	case typ != "":
		var types []string
		if json.Unmarshal(m["type"], &types) != nil || !contains(types, "object") {
			return nil, errors.New("inputSchema does not accept an object")
		}
	}
	m["type"] = json.RawMessage(`"object"`)
	return json.Marshal(m)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// handler calls the tool listed as name: the entry is read at call time,
// so a call made just after a change uses the bounds now admitted.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		e := (*s.tools.Load())[name]
		if e == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool"}
		}
		args, ok := objectArgs(req.Params.Arguments)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments must be an object"}
		}
		c, err := s.envelope(e, args)
		if err != nil {
			// The arguments are an object the envelope rules refuse (a
			// duplicate key): the refusal /v1/calls would give.
			return result(wire.RefuseBody(nil, err), e), nil
		}
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		stop := s.progress(ctx, req)
		a, err := s.o.Backend.Call(calls.WithDoor(ctx, s.door()), c)
		stop()
		if err != nil {
			if ctx.Err() != nil { // the client left: the answer is dropped
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call was cancelled"}
			}
			// A remote broker gone: the agent is told by name, with what
			// to do, instead of a protocol error it cannot act on.
			a = wire.Answer{Refused: wire.MachineUnreachable, Why: wire.CleanWhy(err.Error(), wire.MaxWhyBytes)}
		}
		return result(a, e), nil
	}
}

// door is the door of this server's calls, for their receipts.
func (s *Server) door() string {
	if s.o.Transport == "stdio" {
		return receipts.DoorMCPStdio
	}
	return receipts.DoorMCPHTTP
}

// objectArgs is the call's arguments: absent or null is {}, anything but
// an object is not accepted.
func objectArgs(raw json.RawMessage) (json.RawMessage, bool) {
	i := 0
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	switch {
	case i == len(raw) || string(raw[i:]) == "null":
		return json.RawMessage(`{}`), true
	case raw[i] == '{':
		return raw, true
	}
	return nil, false
}

// envelope is the call envelope of e with args and a fresh callId. Only
// the args come from the client: they are held to the rules a body of
// POST /v1/calls holds them to (one object, valid UTF-8, unique keys,
// bounded depth: wire.CompactMember, which ParseCall applies to them).
// The rest is the broker's own (its callId, the admitted names and
// bounds), so the envelope is not encoded and parsed again.
func (s *Server) envelope(e *entry, args json.RawMessage) (wire.Call, error) {
	args, err := wire.CompactMember(args)
	if err != nil {
		return wire.Call{}, err
	}
	return wire.Call{V: wire.Version, CallID: s.prefix + strconv.FormatUint(s.seq.Add(1), 36), Tool: e.tool.Name,
		DescriptorID: e.descriptor, Args: args, BoundsEcho: e.echo}, nil
}

// result maps an answer (PROTOCOL section 11): observed becomes the
// structured content and one text content holding it (the router has
// held it to the tool's outputSchema, if any: output-invalid otherwise);
// a refusal is a tool error reading "<rule id>: <why>", whose structured
// content is the refusal object, unless the tool declares an
// outputSchema: a client that holds structuredContent to it (as MCP asks
// clients to) would then reject the refusal and hide its rule id, so
// the refusal object goes in the result's _meta instead.
func result(a wire.Answer, e *entry) *sdk.CallToolResult {
	if a.OK {
		return &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: string(a.Observed)}},
			StructuredContent: a.Observed,
		}
	}
	budget := a.Budget
	if budget == nil {
		budget = &wire.Budget{RequestsLimit: e.bounds.MaxRequests}
	}
	r := &sdk.CallToolResult{
		IsError: true,
		Content: []sdk.Content{&sdk.TextContent{Text: string(a.Refused) + ": " + a.Why}},
	}
	body := refusal{Refused: a.Refused, Why: a.Why, Budget: budget}
	if e.tool.OutputSchema != nil {
		r.Meta = sdk.Meta{MetaPrefix + "refusal": body}
	} else {
		r.StructuredContent = body
	}
	return r
}

type refusal struct {
	Refused wire.Rule    `json:"refused"`
	Why     string       `json:"why"`
	Budget  *wire.Budget `json:"budget"`
}

// progress sends notifications/progress every ProgressEvery while the
// call runs, when the client gave a progressToken; the returned function
// stops it and waits.
func (s *Server) progress(ctx context.Context, req *sdk.CallToolRequest) func() {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.o.ProgressEvery)
		defer t.Stop()
		start := time.Now()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				secs := time.Since(start).Seconds()
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token,
					Progress: float64(n), Message: fmt.Sprintf("running for %.0f s", secs)})
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// observe counts every request by method and outcome, lists the catalog
// afresh before tools/list, and tracks sessions once initialized (or, on
// stdio, discovered: on /mcp a server/discover opens no session).
func (s *Server) observe(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "tools/list" {
			s.sync(ctx)
		}
		res, err := next(ctx, method, req)
		outcome := "ok"
		switch r, _ := res.(*sdk.CallToolResult); {
		case ctx.Err() != nil:
			outcome = metrics.Cancelled // the client was not answered
		case err != nil:
			outcome = "error"
		case r != nil && r.IsError:
			outcome = "refused"
		}
		s.o.Metrics.MCPRequest(method, outcome)
		if err == nil && (method == "initialize" || method == "server/discover" && s.o.Transport != "http") {
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
				s.track(ss)
			}
		}
		return res, err
	}
}

// track counts an initialized session in airlock_mcp_sessions until it
// closes.
func (s *Server) track(ss *sdk.ServerSession) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.closed || s.sessions[ss] {
		return
	}
	s.sessions[ss] = true
	g := s.o.Metrics.MCPSessions.WithLabelValues(s.o.Transport)
	g.Inc()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		g.Dec()
		s.sessMu.Lock()
		delete(s.sessions, ss)
		s.sessMu.Unlock()
	}()
}
