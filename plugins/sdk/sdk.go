// Package sdk is what an Airlock tool module imports: register handlers
// with Handle, call Main from main, and the same source builds as a WASI
// command (GOOS=wasip1 GOARCH=wasm go build) or as a reactor
// (add -buildmode=c-shared). The host side of the ABI is documented in
// ABI.md beside this file.
//
// Outside GOOS=wasip1 the package compiles (so the repository builds and
// vets on any platform) but Fetch fails, Log and Config do nothing and
// Main exits: a tool only runs inside the broker's sandbox.
package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Handler answers one call of a tool. args is the call's args object; the
// result is marshalled with encoding/json and must encode to a JSON object,
// of the shape the tool's outputSchema declares when plugin.json has one
// (the broker refuses any other output-invalid).
// A non-nil error fails the call with exec-threw. An error made by Errorf
// is for the caller, who reads it in why as "tool error: <message>"; any
// other error text goes to the operator's log only, never to the caller.
type Handler func(args json.RawMessage) (any, error)

// Errorf formats an error that the caller reads: a handler returning it
// (or an error wrapping it) fails the call with exec-threw and why
// "tool error: <message>", the message cleaned of control and
// bidirectional characters and cut to 1,024 bytes by the broker. Use it
// for failures the caller can act on (a note that does not exist, an
// empty query), and never put a secret in it. Only the text of the
// Errorf error itself is sent, not that of errors wrapping it.
func Errorf(format string, args ...any) error {
	return &toolError{err: fmt.Errorf(format, args...)}
}

// toolError is what Errorf returns; it wraps the formatted error, so
// errors.Is and errors.As see through it as they would with fmt.Errorf.
type toolError struct{ err error }

func (e *toolError) Error() string { return e.err.Error() }
func (e *toolError) Unwrap() error { return e.err }

// callerMessage returns the message of the Errorf error in err's chain.
func callerMessage(err error) (string, bool) {
	var te *toolError
	if errors.As(err, &te) {
		return te.Error(), true
	}
	return "", false
}

var (
	mu       sync.RWMutex
	handlers = map[string]Handler{}
)

// Handle registers h as the tool called name. Call it from init so that a
// reactor, which never runs main, has its handlers too. Registering a name
// twice panics, as with net/http.
func Handle(name string, h Handler) {
	mu.Lock()
	defer mu.Unlock()
	if h == nil {
		panic("sdk: nil handler for " + name)
	}
	if _, dup := handlers[name]; dup {
		panic("sdk: tool registered twice: " + name)
	}
	handlers[name] = h
}

// Tools lists the registered tool names, sorted.
func Tools() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(handlers))
	for n := range handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Root returns the guest path at which the operator's root called name is
// mounted (read-only). Join file names onto it with "/".
func Root(name string) string { return "/" + name }

// Header is an HTTP header, shaped as net/http's (canonical keys to lists
// of values) without importing net/http, which would triple the size of
// every module.
type Header map[string][]string

// Get returns the first value for key, which must be in canonical form
// (e.g. "Content-Type").
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Request is one HTTP request for Fetch. Method defaults to GET.
type Request struct {
	Method string `json:"method,omitempty"`
	URL    string `json:"url"`
	Header Header `json:"header,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// Response is what Fetch returns: the final response after redirects,
// with the whole body (the broker bounds its size).
type Response struct {
	Status int    `json:"status"`
	Header Header `json:"header"`
	Body   []byte `json:"body"`
}

// ErrNotInSandbox is returned by Fetch and Log outside GOOS=wasip1.
var ErrNotInSandbox = errors.New("sdk: not running inside the Airlock sandbox")

// errUnknownTool is returned when the module is asked for a tool that was
// never registered.
var errUnknownTool = errors.New("sdk: no handler registered for this tool")

// dispatch runs the handler for tool and returns its result as JSON.
func dispatch(tool string, args []byte) ([]byte, error) {
	mu.RLock()
	h := handlers[tool]
	mu.RUnlock()
	if h == nil {
		return nil, errUnknownTool
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	v, err := h(json.RawMessage(args))
	if err != nil {
		return nil, err
	}
	// Not json.Marshal: it escapes <, > and & for HTML, which only bloats
	// text a tool returns.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
