package channel_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// world is a channel component behind a real HTTP server on loopback,
// with a router whose only source is the channel (unless a test adds a
// local one first).
type world struct {
	t      *testing.T
	ch     *channel.Channel
	srv    *httptest.Server
	reg    *metrics.Registry
	router *calls.Router
	data   string
	logs   *testkit.Buffer
	opts   channel.Options
}

func newWorld(t *testing.T, tweak func(*channel.Options), local ...calls.Source) *world {
	t.Helper()
	w := &world{t: t, data: t.TempDir(), reg: metrics.New(), logs: &testkit.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w.opts = channel.Options{
		Config: config.Channel{HelloBoundMs: 5000, GraceMs: 100, MaxInflight: 64},
		Data:   w.data, Logger: logger, Metrics: w.reg,
	}
	if len(local) > 0 {
		w.opts.Local = local[0]
	}
	if tweak != nil {
		tweak(&w.opts)
	}
	w.start()
	w.router = calls.NewRouter(w.reg, logger, local...)
	w.router.AddSource(w.ch)
	return w
}

// start (re)builds the component on the same data folder, as a broker
// restart would, and serves it.
func (w *world) start() {
	w.ch = channel.New(w.opts)
	mux := http.NewServeMux()
	w.ch.Mount(mux)
	w.srv = httptest.NewServer(mux)
	ch, srv := w.ch, w.srv
	w.t.Cleanup(func() { w.shut(ch, srv) })
}

func (w *world) shut(ch *channel.Channel, srv *httptest.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ch.Close(ctx); err != nil {
		w.t.Errorf("close: %v", err)
	}
	srv.Close()
	if st := ch.Stats(); st != (channel.Stats{}) {
		w.t.Errorf("after Close the channel still holds %+v", st)
	}
}

// restart closes the component and starts a new one on the same data.
func (w *world) restart() {
	w.shut(w.ch, w.srv)
	w.start()
	w.router = calls.NewRouter(w.reg, slog.New(slog.DiscardHandler))
	w.router.AddSource(w.ch)
}

func (w *world) wsURL(path string) string { return "ws" + strings.TrimPrefix(w.srv.URL, "http") + path }

func (w *world) port() string { return w.srv.URL[strings.LastIndex(w.srv.URL, ":")+1:] }

func (w *world) loopbackOrigin() string { return "http://127.0.0.1:" + w.port() }

// pair adds a pairing and reloads, returning the bearer.
func (w *world) pair(name string) string {
	w.t.Helper()
	bearer, err := pairing.Add(w.data, name, time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.ch.Reload(); err != nil {
		w.t.Fatal(err)
	}
	return bearer
}

func (w *world) unpair(name string) {
	w.t.Helper()
	if err := pairing.Remove(w.data, name); err != nil {
		w.t.Fatal(err)
	}
	if err := w.ch.Reload(); err != nil {
		w.t.Fatal(err)
	}
}

// call runs one call through the router, echoing the remembered bounds.
func (w *world) call(id, descriptor, tool, args string) wire.Answer {
	w.t.Helper()
	bounds := json.RawMessage(`{}`)
	if rt, ok := w.ch.Lookup(descriptor); ok {
		bounds = rt.Descriptor.Bounds.Canonical()
	}
	return w.router.Call(context.Background(), wire.Call{V: 1, CallID: id, Tool: tool, DescriptorID: descriptor,
		Args: json.RawMessage(args), BoundsEcho: bounds})
}

// callAsync runs call on its own goroutine.
func (w *world) callAsync(id, descriptor string) <-chan wire.Answer {
	out := make(chan wire.Answer, 1)
	go func() { out <- w.call(id, descriptor, "t", `{}`) }()
	return out
}

func (w *world) refusals(reason string) float64 {
	return testutil.ToFloat64(w.reg.AuthRefusals.WithLabelValues("channel", reason))
}

func (w *world) rejected(reason string) float64 {
	return testutil.ToFloat64(w.reg.ChannelFramesRejected.WithLabelValues(reason))
}

func (w *world) inflight(kind string) float64 {
	return testutil.ToFloat64(w.reg.ChannelInflight.WithLabelValues(kind))
}

func (w *world) peers(kind string) float64 {
	return testutil.ToFloat64(w.reg.ChannelPeers.WithLabelValues(kind))
}

// routed reports whether the channel routes descriptor to executor.
func (w *world) routed(descriptor, executor string) bool {
	rt, ok := w.ch.Lookup(descriptor)
	return ok && rt.Executor == executor
}

// desc is a one-tool descriptor with the given time bound.
func desc(id string, timeoutMs int) wire.Descriptor {
	return wire.Descriptor{DescriptorID: id,
		Tools:  []wire.Tool{{Name: "t", Description: "test tool", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Bounds: wire.Bounds{TimeoutMs: timeoutMs, MemoryMiB: 16, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}}
}

// peer is a hand-written channel client: a page or an environment.
type peer struct {
	t     *testing.T
	conn  *websocket.Conn
	calls chan wire.Call // calls received, when not served
	done  chan struct{}
	err   error // why the connection ended, once done is closed
	mu    sync.Mutex
	serve func(wire.Call) []byte // nil: calls go to the calls channel
}

// dial opens path with header and starts reading.
func (w *world) dial(path string, header http.Header) *peer {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, w.wsURL(path), &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		w.t.Fatalf("dial %s: %v", path, err)
	}
	conn.SetReadLimit(-1)
	p := &peer{t: w.t, conn: conn, calls: make(chan wire.Call, 256), done: make(chan struct{})}
	go p.read()
	w.t.Cleanup(func() {
		_ = conn.CloseNow()
		<-p.done
	})
	return p
}

// page connects as a browser page with a loopback Origin.
func (w *world) page(header ...string) *peer {
	h := http.Header{"Origin": {w.loopbackOrigin()}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	return w.dial("/local/channel", h)
}

// env connects without an Origin and says hello with bearer.
func (w *world) env(bearer string) *peer {
	p := w.dial("/channel", nil)
	p.send(wire.HelloFrame(bearer))
	return p
}

func (p *peer) read() {
	defer close(p.done)
	for {
		_, data, err := p.conn.Read(context.Background())
		if err != nil {
			p.err = err
			return
		}
		c, err := wire.ParseCall(data)
		if err != nil {
			p.t.Errorf("the broker sent an invalid call: %v", err)
			continue
		}
		p.mu.Lock()
		serve := p.serve
		p.mu.Unlock()
		if serve == nil {
			p.calls <- c
		} else if out := serve(c); out != nil {
			p.send(out)
		}
	}
}

// answering makes the peer answer every call with f.
func (p *peer) answering(f func(wire.Call) []byte) *peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serve = f
	return p
}

// echo answers ok with {"who":who}.
func echo(who string) func(wire.Call) []byte {
	return func(c wire.Call) []byte {
		return wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{"who":"`+who+`"}`), nil))
	}
}

func (p *peer) send(frame []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.conn.Write(ctx, websocket.MessageText, frame) // fails harmlessly once refused
}

func (p *peer) catalog(ds ...wire.Descriptor) *peer {
	p.send(wire.CatalogFrame(ds))
	return p
}

// next is the next call the peer received.
func (p *peer) next() wire.Call {
	p.t.Helper()
	select {
	case c := <-p.calls:
		return c
	case <-time.After(60 * time.Second):
		p.t.Fatal("no call arrived")
	}
	return wire.Call{}
}

// closed waits for the broker to close the connection and returns the
// close code and reason.
func (p *peer) closed() (websocket.StatusCode, string) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.t.Fatal("the broker did not close the connection")
	}
	var ce websocket.CloseError
	if !errors.As(p.err, &ce) {
		p.t.Fatalf("connection ended without a close frame: %v", p.err)
	}
	return ce.Code, ce.Reason
}

func (p *peer) wantClosed(code websocket.StatusCode, reason string) {
	p.t.Helper()
	gotCode, gotReason := p.closed()
	if gotCode != code || gotReason != reason {
		p.t.Fatalf("closed %d %q, want %d %q", gotCode, gotReason, code, reason)
	}
}

// leave closes the peer's side normally.
func (p *peer) leave() {
	_ = p.conn.Close(websocket.StatusNormalClosure, "")
	<-p.done
}

func wantRule(t *testing.T, a wire.Answer, r wire.Rule) {
	t.Helper()
	if a.OK || a.Refused != r {
		data, _ := json.Marshal(a)
		t.Fatalf("want %s, got %s", r, data)
	}
}

func wantObserved(t *testing.T, a wire.Answer, observed string) {
	t.Helper()
	if !a.OK || string(a.Observed) != observed {
		data, _ := json.Marshal(a)
		t.Fatalf("want ok %s, got %s", observed, data)
	}
}
