package baseline

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/airlock/airlock/executors/wire"
)

// maxHTTPCall bounds a call envelope the HTTP floor reads, as the broker
// bounds POST /v1/calls.
const maxHTTPCall = 16 << 20

// HTTPFloor is a reactor's tool behind a bare net/http handler: the floor
// of POST /v1/calls with the HTTP hop in it. Each POST body is a call
// envelope (PROTOCOL section 6) read with encoding/json for its callId
// and args only; the tool runs on a reused instance (one per request in
// flight, kept for the next request) and the answer envelope goes back
// with status 200. There is no token, schema, bounds, routing, metric or
// check of the output: what is left of a pooled call once Airlock's own
// work is taken out (cmd/airlock/internal/load/RATIONALE.md, "Why does `load calls
// --reuse-instance` measure a bare HTTP floor too?"). A call that fails
// answers 500 with no envelope, and its instance is closed rather than
// reused.
type HTTPFloor struct {
	r    *Runner
	tool string

	mu     sync.Mutex
	idle   []*Instance
	closed bool
}

// HTTPFloor serves tool on reused instances of the runner's reactor.
func (r *Runner) HTTPFloor(tool string) (*HTTPFloor, error) {
	if r.style != Reactor {
		return nil, ErrNotReactor
	}
	return &HTTPFloor{r: r, tool: tool}, nil
}

// floorCall is what the floor reads of a call envelope.
type floorCall struct {
	CallID string          `json:"callId"`
	Args   json.RawMessage `json:"args"`
}

func (f *HTTPFloor) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST a call envelope", http.StatusMethodNotAllowed)
		return
	}
	var c floorCall
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxHTTPCall)).Decode(&c); err != nil {
		http.Error(w, errNotEnvelope.Error(), http.StatusBadRequest)
		return
	}
	answer, err := f.answer(req.Context(), c)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
}

// Answer runs one call envelope and returns its answer envelope: the
// floor without its HTTP hop, for a floor read line by line over a pipe
// (the floor of `airlock mcp` on stdio).
func (f *HTTPFloor) Answer(ctx context.Context, envelope []byte) ([]byte, error) {
	var c floorCall
	if err := json.Unmarshal(envelope, &c); err != nil {
		return nil, errNotEnvelope
	}
	return f.answer(ctx, c)
}

// answer runs c and encodes its answer envelope.
func (f *HTTPFloor) answer(ctx context.Context, c floorCall) ([]byte, error) {
	out, err := f.call(ctx, c.Args)
	if err != nil {
		return nil, err
	}
	answer, err := wire.Answer{V: wire.Version, CallID: c.CallID, OK: true, Observed: out}.AppendJSON(nil)
	if err != nil {
		return nil, errors.New("the tool's output is not JSON")
	}
	return answer, nil
}

// call runs the tool on an idle instance, or a new one, and keeps the
// instance for the next call unless the call failed.
func (f *HTTPFloor) call(ctx context.Context, args []byte) ([]byte, error) {
	inst, err := f.take(ctx)
	if err != nil {
		return nil, err
	}
	out, err := inst.Call(ctx, f.tool, args)
	if err != nil {
		_ = inst.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	f.put(ctx, inst)
	return out, nil
}

func (f *HTTPFloor) take(ctx context.Context) (*Instance, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errFloorClosed
	}
	if n := len(f.idle); n > 0 {
		inst := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return inst, nil
	}
	f.mu.Unlock()
	return f.r.NewInstance(ctx)
}

func (f *HTTPFloor) put(ctx context.Context, inst *Instance) {
	f.mu.Lock()
	if !f.closed {
		f.idle = append(f.idle, inst)
		inst = nil
	}
	f.mu.Unlock()
	if inst != nil {
		_ = inst.Close(context.WithoutCancel(ctx))
	}
}

// Close closes the idle instances; a request still running closes its
// own when it ends. The Runner stays open.
func (f *HTTPFloor) Close(ctx context.Context) error {
	f.mu.Lock()
	idle := f.idle
	f.idle, f.closed = nil, true
	f.mu.Unlock()
	var err error
	for _, inst := range idle {
		err = errors.Join(err, inst.Close(ctx))
	}
	return err
}
