package envclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/channel/envclient"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// broker is a channel component on a loopback server with a router.
type broker struct {
	ch     *channel.Channel
	srv    *httptest.Server
	router *calls.Router
	data   string
}

func newBroker(t *testing.T) *broker {
	b := &broker{data: t.TempDir()}
	reg := metrics.New()
	b.ch = channel.New(channel.Options{Config: config.Channel{HelloBoundMs: 5000, GraceMs: 200, MaxInflight: 64},
		Data: b.data, Metrics: reg})
	mux := http.NewServeMux()
	b.ch.Mount(mux)
	b.srv = httptest.NewServer(mux)
	b.router = calls.NewRouter(reg, slog.New(slog.DiscardHandler))
	b.router.AddSource(b.ch)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = b.ch.Close(ctx)
		b.srv.Close()
	})
	return b
}

func (b *broker) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/channel" }

func (b *broker) pair(t *testing.T, name string) string {
	bearer, err := pairing.Add(b.data, name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ch.Reload(); err != nil {
		t.Fatal(err)
	}
	return bearer
}

func (b *broker) call(id, descriptor, tool string) wire.Answer {
	echo := json.RawMessage(`{}`)
	if rt, ok := b.ch.Lookup(descriptor); ok {
		echo = rt.Descriptor.Bounds.Canonical()
	}
	return b.router.Call(context.Background(), wire.Call{V: 1, CallID: id, Tool: tool, DescriptorID: descriptor, Args: json.RawMessage(`{}`), BoundsEcho: echo})
}

func (b *broker) routed(id string) bool {
	_, ok := b.ch.Lookup(id)
	return ok
}

// executor is a fake executors.Table: echo answers, panic panics, block
// waits for release.
type executor struct {
	mu      sync.Mutex
	ds      []wire.Descriptor
	release chan struct{}
	started chan struct{}
}

func newExecutor(ids ...string) *executor {
	e := &executor{release: make(chan struct{}), started: make(chan struct{}, 16)}
	e.set(ids...)
	return e
}

func (e *executor) set(ids ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ds = nil
	for _, id := range ids {
		e.ds = append(e.ds, wire.Descriptor{DescriptorID: id,
			Tools:  []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}, {Name: "panic", InputSchema: json.RawMessage(`{}`)}, {Name: "block", InputSchema: json.RawMessage(`{}`)}},
			Bounds: wire.Bounds{TimeoutMs: 30000, MemoryMiB: 16, MaxOutputBytes: 1024}})
	}
}

func (e *executor) Descriptors() []wire.Descriptor {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wire.Descriptor(nil), e.ds...)
}

func (e *executor) Call(ctx context.Context, c wire.Call) wire.Answer {
	switch c.Tool {
	case "panic":
		panic("the executor is broken")
	case "block":
		e.started <- struct{}{}
		select {
		case <-e.release:
		case <-ctx.Done():
		}
	}
	return wire.Observed(c.CallID, json.RawMessage(`{"tool":"`+c.Tool+`"}`), nil)
}

// run starts a client and returns a stop function that cancels it and
// returns Run's error.
func run(t *testing.T, o envclient.Options) (*envclient.Client, func() error) {
	t.Helper()
	if o.BackoffMax == 0 {
		o.BackoffMax = 50 * time.Millisecond
	}
	c, err := envclient.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 10*time.Second) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() {
			cancel()
			result = <-done
		})
		return result
	}
	t.Cleanup(func() { stop() })
	return c, stop
}

func bearerOf(s string) func() (string, error) { return func() (string, error) { return s, nil } }

func TestClientServesItsCatalog(t *testing.T) {
	b := newBroker(t)
	ex := newExecutor("fx")
	var events testkit.Buffer
	c, _ := run(t, envclient.Options{URL: b.url(), Bearer: bearerOf(b.pair(t, "lab")), Executor: ex, Catalog: ex.Descriptors,
		Events: &events})
	testkit.Eventually(t, "the catalog", func() bool { return b.routed("fx") })
	if a := b.call("c1", "fx", "echo"); !a.OK || a.CallID != "c1" || string(a.Observed) != `{"tool":"echo"}` {
		t.Fatalf("echo: %+v", a)
	}
	// A panicking executor is contained: exec-threw, and the client lives on.
	if a := b.call("c2", "fx", "panic"); a.Refused != wire.ExecThrew || a.CallID != "c2" {
		t.Fatalf("panic: %+v", a)
	}
	if a := b.call("c3", "fx", "echo"); !a.OK {
		t.Fatalf("after the panic: %+v", a)
	}
	ex.set("gx")
	c.CatalogChanged()
	testkit.Eventually(t, "the new catalog", func() bool { return b.routed("gx") && !b.routed("fx") })
	testkit.Eventually(t, "the connected event", func() bool {
		return strings.HasPrefix(events.String(), `{"broker":"`+b.url()+`","event":"connected"}`)
	})
}

// fakeBroker accepts connections, records what each sent first, and then
// runs script on it.
type fakeBroker struct {
	srv      *httptest.Server
	mu       sync.Mutex
	origins  []string
	hellos   []string
	catalogs []string
	conns    atomic.Int32
	wg       sync.WaitGroup
}

func newFakeBroker(t *testing.T, script func(n int32, conn *websocket.Conn)) *fakeBroker {
	f := &fakeBroker{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		f.wg.Add(1)
		defer f.wg.Done()
		defer conn.CloseNow()
		n := f.conns.Add(1)
		_, hello, err1 := conn.Read(context.Background())
		_, catalog, err2 := conn.Read(context.Background())
		if err1 != nil || err2 != nil {
			return
		}
		f.mu.Lock()
		f.origins = append(f.origins, strings.Join(r.Header.Values("Origin"), ","))
		f.hellos = append(f.hellos, string(hello))
		f.catalogs = append(f.catalogs, string(catalog))
		f.mu.Unlock()
		script(n, conn)
	}))
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeBroker) url() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/channel" }

// TestClientHelloAndReconnect: the client sends no Origin, the exact
// hello, then its catalog; when the broker goes away it reconnects (with
// a bearer read afresh) and says hello again.
func TestClientHelloAndReconnect(t *testing.T) {
	f := newFakeBroker(t, func(n int32, conn *websocket.Conn) {
		if n < 3 {
			_ = conn.Close(websocket.StatusInternalError, "gone")
			return
		}
		_, _, _ = conn.Read(context.Background()) // stay until the client leaves
	})
	ex := newExecutor("fx")
	var reads atomic.Int32
	bearer := func() (string, error) {
		if reads.Add(1) == 1 {
			return "", errors.New("bearer file not there yet")
		}
		return "vbx_secret", nil
	}
	var logs testkit.Buffer
	_, stop := run(t, envclient.Options{URL: f.url(), Bearer: bearer, Executor: ex, Catalog: ex.Descriptors,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	testkit.Eventually(t, "three connections", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.catalogs) == 3
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.hellos {
		if f.origins[i] != "" {
			t.Errorf("connection %d sent Origin %q", i, f.origins[i])
		}
		if f.hellos[i] != `{"type":"hello","role":"environment","bearer":"vbx_secret"}` {
			t.Errorf("hello %s", f.hellos[i])
		}
		if _, err := wire.ParseCatalog([]byte(f.catalogs[i])); err != nil || !strings.Contains(f.catalogs[i], `"fx"`) {
			t.Errorf("catalog %s (%v)", f.catalogs[i], err)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"connecting"`); n < 3 {
		t.Errorf("%d connection attempts logged", n)
	}
	if strings.Contains(logs.String(), "vbx_secret") {
		t.Error("the bearer was logged")
	}
}

// TestClientAnswersBadCallFrames: a call frame that fails validation is
// refused when its callId can be read, and dropped otherwise.
func TestClientAnswersBadCallFrames(t *testing.T) {
	answers := make(chan string, 8)
	f := newFakeBroker(t, func(_ int32, conn *websocket.Conn) {
		for _, frame := range []string{
			`not json`,
			`{"v":1,"callId":"u1","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{},"grant":"all"}`,
			`{"v":3,"callId":"u2","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{}}`,
			`{"v":1,"callId":"ok","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{}}`,
		} {
			_ = conn.Write(context.Background(), websocket.MessageText, []byte(frame))
		}
		for range 3 {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			answers <- string(data)
		}
		_, _, _ = conn.Read(context.Background())
	})
	ex := newExecutor("fx")
	run(t, envclient.Options{URL: f.url(), Bearer: bearerOf("vbx_x"), Executor: ex, Catalog: ex.Descriptors})
	got := map[string]wire.Rule{}
	for range 3 {
		a, err := wire.ParseAnswer([]byte(<-answers))
		if err != nil {
			t.Fatal(err)
		}
		got[a.CallID] = a.Refused
	}
	if got["u1"] != wire.UnknownField || got["u2"] != wire.VersionMismatch || got["ok"] != "" {
		t.Errorf("answers %v", got)
	}
}

// TestClientDropsBinaryAndOversizedFrames: a binary frame (even one
// holding a valid call) and a frame over the call bound are dropped
// unanswered, and the connection goes on, as the broker treats its peers'.
func TestClientDropsBinaryAndOversizedFrames(t *testing.T) {
	answers := make(chan string, 8)
	f := newFakeBroker(t, func(_ int32, conn *websocket.Conn) {
		call := `{"v":1,"callId":"%s","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{}}`
		_ = conn.Write(context.Background(), websocket.MessageBinary, fmt.Appendf(nil, call, "bin"))
		_ = conn.Write(context.Background(), websocket.MessageText, fmt.Appendf(nil, call, strings.Repeat("x", 17<<20)))
		_ = conn.Write(context.Background(), websocket.MessageText, fmt.Appendf(nil, call, "ok"))
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			answers <- string(data)
		}
	})
	ex := newExecutor("fx")
	run(t, envclient.Options{URL: f.url(), Bearer: bearerOf("vbx_x"), Executor: ex, Catalog: ex.Descriptors})
	a, err := wire.ParseAnswer([]byte(<-answers))
	if err != nil || a.CallID != "ok" || !a.OK {
		t.Fatalf("first answer %+v (%v), want the text call's", a, err)
	}
	if n := f.conns.Load(); n != 1 {
		t.Errorf("%d connections: a dropped frame must not cost the connection", n)
	}
}

// TestClientDrains: when stopped, the client answers new calls
// shutting-down, lets the running one finish, then closes 1000.
func TestClientDrains(t *testing.T) {
	b := newBroker(t)
	ex := newExecutor("fx")
	_, stop := run(t, envclient.Options{URL: b.url(), Bearer: bearerOf(b.pair(t, "lab")), Executor: ex, Catalog: ex.Descriptors})
	testkit.Eventually(t, "the catalog", func() bool { return b.routed("fx") })
	first := make(chan wire.Answer, 1)
	go func() { first <- b.call("long", "fx", "block") }()
	<-ex.started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	testkit.Eventually(t, "a call refused shutting-down", func() bool {
		a := b.call("late", "fx", "echo")
		return a.Refused == wire.ShuttingDown
	})
	close(ex.release)
	if a := <-first; !a.OK {
		t.Fatalf("the running call did not finish: %+v", a)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	testkit.Eventually(t, "the environment to be gone", func() bool { return b.call("after", "fx", "echo").Refused == wire.MachineUnreachable })
}

// TestClientStopsWhenReplaced: a second environment with the same bearer
// replaces the first, which stops instead of fighting back.
func TestClientStopsWhenReplaced(t *testing.T) {
	b := newBroker(t)
	bearer := b.pair(t, "lab")
	first := newExecutor("one")
	c1, err := envclient.New(envclient.Options{URL: b.url(), Bearer: bearerOf(bearer), Executor: first, Catalog: first.Descriptors, BackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c1.Run(context.Background(), time.Second) }()
	testkit.Eventually(t, "the first catalog", func() bool { return b.routed("one") })
	second := newExecutor("two")
	run(t, envclient.Options{URL: b.url(), Bearer: bearerOf(bearer), Executor: second, Catalog: second.Descriptors})
	select {
	case err := <-done:
		if !errors.Is(err, envclient.ErrReplaced) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the replaced client did not stop")
	}
	testkit.Eventually(t, "the second catalog", func() bool { return b.routed("two") })
}

func TestNewNeedsOptions(t *testing.T) {
	if _, err := envclient.New(envclient.Options{URL: "ws://x"}); !errors.Is(err, envclient.ErrOptions) {
		t.Error(err)
	}
}

// TestClientStopsWhenItsBearerIsRefused: a revoked pairing closes the
// environment 1008 bearer-refused; the same bearer can never succeed, so
// Run ends with ErrBearerRefused instead of retrying for ever.
func TestClientStopsWhenItsBearerIsRefused(t *testing.T) {
	b := newBroker(t)
	ex := newExecutor("fx")
	c, err := envclient.New(envclient.Options{URL: b.url(), Bearer: bearerOf(b.pair(t, "lab")), Executor: ex, Catalog: ex.Descriptors, BackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), time.Second) }()
	testkit.Eventually(t, "the catalog", func() bool { return b.routed("fx") })
	if err := pairing.Remove(b.data, "lab"); err != nil {
		t.Fatal(err)
	}
	if err := b.ch.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, envclient.ErrBearerRefused) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the refused client did not stop")
	}
}

// TestClientRetriesAReplacedBearer: an operator who paired again and
// replaced the bearer before the broker refused the old one is not
// stopped: the client reads the bearer again and connects with the new
// one.
func TestClientRetriesAReplacedBearer(t *testing.T) {
	b := newBroker(t)
	ex := newExecutor("fx")
	var bearer atomic.Value
	bearer.Store(b.pair(t, "lab"))
	var events testkit.Buffer
	_, stop := run(t, envclient.Options{URL: b.url(), Bearer: func() (string, error) { return bearer.Load().(string), nil },
		Executor: ex, Catalog: ex.Descriptors, Events: &events})
	testkit.Eventually(t, "the catalog", func() bool { return b.routed("fx") })
	if err := pairing.Remove(b.data, "lab"); err != nil {
		t.Fatal(err)
	}
	renewed, err := pairing.Add(b.data, "lab", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bearer.Store(renewed)
	if err := b.ch.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "a connection with the new bearer", func() bool { return strings.Count(events.String(), `"event":"connected"`) == 2 })
	testkit.Eventually(t, "a call through the new bearer", func() bool { return b.call("after", "fx", "echo").OK })
	if !strings.Contains(events.String(), `"reason":"bearer-refused"`) {
		t.Errorf("the old bearer was not refused:\n%s", events.String())
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
}
