package mcp

import (
	"net/http"
	"strings"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
)

// plainErrors is the response of a request the SDK serves. The SDK
// refuses what it does not serve (an unknown method, a missing Accept, an
// unknown session, another HTTP method) with http.Error: plain text that
// may quote the request. Each such refusal becomes section 1.4's JSON
// body, whose message is static: 404 NOT_FOUND for an unknown session,
// else 400 INVALID_MESSAGE. The SDK's JSON-RPC errors and streams pass as
// written.
type plainErrors struct {
	http.ResponseWriter
	replaced bool
}

func (w *plainErrors) WriteHeader(status int) {
	if status < 400 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.replaced = true
	code := contract.InvalidMessage
	if status == http.StatusNotFound {
		code = contract.NotFound
	}
	httpx.WriteError(w.ResponseWriter, code)
}

// Write drops the SDK's text once its refusal was replaced.
func (w *plainErrors) Write(p []byte) (int, error) {
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush serves the SDK's SSE streams (http.ResponseController).
func (w *plainErrors) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *plainErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }
