package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/metrics"
)

// sessionHeader names a streamable HTTP session.
const sessionHeader = "Mcp-Session-Id"

// HTTPOptions configure /mcp.
type HTTPOptions struct {
	// Server serves the sessions; HTTP closes it.
	Server *Server
	// Token is the launch token; without one /mcp answers 404.
	Token httpx.Token
	// Port is the broker's bound port: the Origin rule admits only the
	// broker's own loopback origins.
	Port    func() int
	Config  config.MCP
	Refused httpx.Refusal
}

// HTTP serves POST, GET and DELETE /mcp (streamable HTTP, PROTOCOL
// section 11) behind the broker's guards: inert without a launch token,
// the Origin rule, the token as a bearer or X-Tensorviz-Token, section
// 1.4's error bodies, and bounds on sessions and bodies. It implements
// broker.Component.
type HTTP struct {
	o         HTTPOptions
	h         *sdk.StreamableHTTPHandler
	stateless *sdk.StreamableHTTPHandler // 2026-07-28's requests (stateless.go)
	newMu     sync.Mutex                 // serializes taking a place, so the cap holds
	listens   atomic.Int64               // stateless listens open: each holds a place
	draining  atomic.Bool
	drained   chan struct{} // closed when Drain has closed the sessions
	drainOne  sync.Once
	calls     inflight[callKey] // requests of POSTs being served
}

// NewHTTP builds /mcp over o.Server.
func NewHTTP(o HTTPOptions) *HTTP {
	h := &HTTP{o: o, drained: make(chan struct{})}
	h.h = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return o.Server.sdk }, &sdk.StreamableHTTPOptions{
		SessionTimeout: time.Duration(o.Config.SessionIdleMs) * time.Millisecond,
		// The body is read and bounded before the SDK sees it (see
		// ServeHTTP); this is a second bound, never reached.
		MaxRequestBodyBytes: int64(o.Config.MaxBodyBytes) + 1,
		Logger:              o.Server.o.Logger,
		// The broker's own Host guard runs first (PROTOCOL section 1.3).
		DisableLocalhostProtection: true,
	})
	h.stateless = newStateless(o)
	o.Server.listenFor.Store(int64(time.Duration(o.Config.SessionIdleMs) * time.Millisecond))
	return h
}

// Mount registers /mcp for every method; the SDK answers the ones it does
// not serve.
func (h *HTTP) Mount(mux *http.ServeMux) { mux.Handle("/mcp", h) }

// Drain refuses new requests (503) and, once the tool calls in flight
// have answered, closes every session: an open GET stream would otherwise
// hold the broker's drain until its grace ends.
func (h *HTTP) Drain() {
	h.draining.Store(true)
	h.drainOne.Do(func() {
		go func() {
			defer close(h.drained)
			for h.o.Server.inflight.Load() > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			h.o.Server.Close()
		}()
	})
}

// Close drains, then waits for the sessions to close until ctx ends.
func (h *HTTP) Close(ctx context.Context) error {
	h.Drain()
	select {
	case <-h.drained:
		return nil
	case <-ctx.Done():
	}
	h.o.Server.Close() // cancels the calls left; the executors are closed next
	<-h.drained
	return fmt.Errorf("mcp: close: %w", context.Cause(ctx))
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.o.Token.Set() {
		httpx.WriteError(w, contract.NotFound)
		return
	}
	if code := h.check(r); code != "" {
		h.o.Refused("mcp", code)
		httpx.WriteError(w, code)
		return
	}
	if h.draining.Load() {
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	w = &plainErrors{ResponseWriter: w}
	if r.Method == http.MethodPost {
		body, err := httpx.ReadBody(w, r, int64(h.o.Config.MaxBodyBytes))
		if err != nil {
			httpx.WriteError(w, contract.InvalidMessage)
			return
		}
		msg, reply := message(body)
		if reply != nil {
			// A body that is not one JSON-RPC message is a JSON-RPC error,
			// as on stdio; the SDK's own answer is text that may quote it.
			h.o.Server.o.Metrics.MCPRequests.WithLabelValues(metrics.Other, "error").Inc()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(reply)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if stateless(r) {
			h.serveStateless(w, r, msg)
			return
		}
		session := r.Header.Get(sessionHeader)
		if session == "" {
			h.newSession(w, r)
			return
		}
		if id, ok := cancelledID(msg); ok {
			h.calls.cancel(callKey{session, id})
		}
		if id, ok := callID(msg); ok {
			k := callKey{session, id}
			h.calls.open(k)
			defer h.calls.close(k)
			w = &callWriter{ResponseWriter: w, cancelled: func() bool { return h.calls.cancelled(k) }, log: h.o.Server.o.Logger}
		}
	}
	h.h.ServeHTTP(w, r)
}

// check applies the Origin rule, then the token: "" lets the request in.
func (h *HTTP) check(r *http.Request) contract.Code {
	if _, present := r.Header["Origin"]; present {
		origin, one := httpx.OneOrigin(r)
		if !one || !httpx.LoopbackOrigin(origin, h.o.Port()) {
			return contract.InvalidOrigin
		}
	}
	presented, ok := bearer(r)
	if !ok {
		presented = r.Header.Get(contract.TokenHeader)
	}
	if !h.o.Token.Matches(presented) {
		return contract.InvalidCredentials
	}
	return ""
}

// message is the one JSON-RPC message of a POST body, or the JSON-RPC
// error answering a body that is not one (decode).
func message(body []byte) (jsonrpc.Message, []byte) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, reply(jsonrpc.ID{}, jsonrpc.CodeParseError, "not one JSON value")
	}
	return decode(trimmed, false)
}

// bearer is the token of an Authorization: Bearer header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// newSession serves a POST that opens a session (initialize), unless the
// places are at their bound: then 503.
func (h *HTTP) newSession(w http.ResponseWriter, r *http.Request) {
	h.newMu.Lock()
	defer h.newMu.Unlock()
	if h.places() >= h.o.Config.MaxSessions {
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	h.h.ServeHTTP(w, r)
}

// holdListen takes a place for a stateless listen; false at the bound.
// The caller gives it back (listens.Add(-1)) when the listen ends.
func (h *HTTP) holdListen() bool {
	h.newMu.Lock()
	defer h.newMu.Unlock()
	if h.places() >= h.o.Config.MaxSessions {
		return false
	}
	h.listens.Add(1)
	return true
}

// places counts what holds a place under mcp.max_sessions: the sessions
// and the stateless listens. A stateless request's own SDK session has no
// id and lives only as long as the request: it takes none.
func (h *HTTP) places() int {
	n := int(h.listens.Load())
	for ss := range h.o.Server.sdk.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}
