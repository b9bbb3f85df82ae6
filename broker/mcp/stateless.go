package mcp

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
)

// statelessRevision is the first MCP revision without sessions: a
// request carries its revision in Mcp-Protocol-Version and in its _meta,
// and a client learns what the server speaks with server/discover.
const statelessRevision = "2026-07-28"

// methodListen is 2026-07-28's stream of notifications: the one
// stateless request that stays open.
const methodListen = "subscriptions/listen"

// stateless reports whether a POST is a stateless request: no session,
// and a revision from 2026-07-28 on. A later revision is served
// stateless too, where the SDK answers it with the revisions it speaks
// (so the client can retry at 2026-07-28), as it orders revisions.
func stateless(r *http.Request) bool {
	return r.Header.Get(sessionHeader) == "" && r.Header.Get("Mcp-Protocol-Version") >= statelessRevision
}

// newStateless is the SDK's handler of stateless requests over the same
// server and tool set as the sessions. The guards and the body bound are
// ServeHTTP's, applied before it; a tool call's context ends with its
// HTTP request, which is how a stateless client cancels.
func newStateless(o HTTPOptions) *sdk.StreamableHTTPHandler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return o.Server.sdk }, &sdk.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          int64(o.Config.MaxBodyBytes) + 1,
		Logger:                       o.Server.o.Logger,
		DisableLocalhostProtection:   true,
	})
}

// serveStateless serves one stateless request. Each lives as long as its
// answer takes, except subscriptions/listen, which stays open to carry
// notifications: a listen is what a session's GET stream is to a
// session, so it holds a place under mcp.max_sessions and ends, answered,
// after mcp.session_idle_ms (Server.endListen); the client listens again.
func (h *HTTP) serveStateless(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != methodListen {
		h.stateless.ServeHTTP(w, r)
		return
	}
	if !h.holdListen() {
		httpx.WriteError(w, contract.Unavailable)
		return
	}
	defer h.listens.Add(-1)
	h.stateless.ServeHTTP(w, r)
}

// endListen ends each subscriptions/listen after listenFor, which /mcp
// sets to mcp.session_idle_ms (over stdio a listen lasts as long as the
// connection). It bounds the handler's context, inside observe, rather
// than the HTTP request's: the listen returns its result, the stream ends
// with it, and it is counted ok, not cancelled.
func (s *Server) endListen(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if d := time.Duration(s.listenFor.Load()); method == methodListen && d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return next(ctx, method, req)
	}
}
