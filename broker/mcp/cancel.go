package mcp

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/airlock/airlock/executors/wire"
)

// A request the client cancelled (notifications/cancelled) is not
// answered: MCP says the receiver should not respond, and the answer the
// SDK would still write (the handler's result once the cancel has stopped
// the call: a refusal of a run that was cut) tells the client nothing but
// a failure that was its own decision. The SDK cancels the handler's
// context and writes the answer all the same, so each transport holds it
// back: stdio drops the response by id (lineConn.Write), /mcp drops what
// the SDK writes on the call's POST stream (callWriter).

// inflight is the requests of a transport that are not answered yet, by
// key, each marked once cancelled. It holds one entry per request the SDK
// is handling, so it is bounded by what the SDK runs.
type inflight[K comparable] struct {
	mu sync.Mutex
	m  map[K]bool
}

func (f *inflight[K]) open(k K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[K]bool{}
	}
	f.m[k] = false
}

// cancel marks k cancelled when it is in flight.
func (f *inflight[K]) cancel(k K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[k]; ok {
		f.m[k] = true
	}
}

func (f *inflight[K]) cancelled(k K) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[k]
}

// close forgets k and reports whether it was cancelled.
func (f *inflight[K]) close(k K) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.m[k]
	delete(f.m, k)
	return c
}

// cancelledID is the request a notifications/cancelled names, read as the
// SDK reads it: the exact key "requestId" of its params (the message has
// passed the strict walk), decoded as the SDK's codec decodes it.
func cancelledID(msg jsonrpc.Message) (jsonrpc.ID, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() || req.Method != "notifications/cancelled" {
		return jsonrpc.ID{}, false
	}
	var raw json.RawMessage
	if wire.EachMember(req.Params, maxMessageDepth, func(key []byte, val json.RawMessage) {
		if string(key) == "requestId" {
			raw = val
		}
	}) != nil || raw == nil {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}

// callID is the id of a request that expects an answer.
func callID(msg jsonrpc.Message) (jsonrpc.ID, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return jsonrpc.ID{}, false
	}
	return req.ID, true
}

// logHeldBack is logged when the answer to a cancelled request is held
// back.
const logHeldBack = "mcp: a cancelled request is not answered"

// callKey names a request on /mcp: its session and its id.
type callKey struct {
	session string
	id      jsonrpc.ID
}

// callWriter is the response of a /mcp POST that carries one request:
// once the client cancels that request, whatever the SDK writes on it
// (the answer, a late progress notification) is dropped, so the stream
// ends without an answer.
type callWriter struct {
	http.ResponseWriter
	cancelled func() bool
	logged    atomic.Bool
	log       *slog.Logger
}

func (w *callWriter) Write(p []byte) (int, error) {
	if w.cancelled() {
		if !w.logged.Swap(true) {
			w.log.Debug(logHeldBack)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush serves the SDK's SSE stream (http.ResponseController).
func (w *callWriter) Flush() {
	if !w.cancelled() {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *callWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
