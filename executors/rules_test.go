package executors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// forStyles runs f against the command and the reactor build of the
// guest fixture, each admitted under bounds b on a runtime made with cfg.
func forStyles(t *testing.T, cfg Config, b wire.Bounds, f func(t *testing.T, p *Program)) {
	for _, st := range styles {
		t.Run(st.name, func(t *testing.T) {
			r := newRuntime(t, cfg)
			f(t, load(t, r, guestDescriptor("guest", b), testkit.Fixture(t, st.file)))
		})
	}
}

func TestEchoRoundTrip(t *testing.T) {
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		a := call(t, p, "echo", `{ "b": [1, 2.5, "x"], "a": {"n": null} }`)
		if !a.OK || string(a.Observed) != `{"b":[1,2.5,"x"],"a":{"n":null}}` {
			t.Fatalf("echo answered %+v", a)
		}
		if a.CallID != "call_1" || a.Budget == nil || *a.Budget != (wire.Budget{RequestsLimit: 0}) {
			t.Fatalf("envelope fields wrong: %+v", a)
		}
		if m := wantOK(t, call(t, p, "sleep", `{"ms":10}`)); m["slept"] != 10.0 {
			t.Fatalf("sleep observed %v", m)
		}
	})
}

func TestExecTimeout(t *testing.T) {
	b := defaultBounds()
	b.TimeoutMs = 300
	forStyles(t, Config{}, b, func(t *testing.T, p *Program) {
		for _, c := range [][2]string{{"loop", `{}`}, {"sleep", `{"ms":600000}`}} {
			start := time.Now()
			a := call(t, p, c[0], c[1])
			wantRule(t, a, wire.ExecTimeout)
			wantRefusalWhy(t, a, "the tool ran past bounds.timeoutMs 300 ms")
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("%s refused after %v, before its deadline", c[0], d)
			}
		}
	})
}

// TestCallerCancelIsCancellation: only our own deadline is exec-timeout;
// a run its caller ended (a cancel, or the caller's own deadline) is
// wire.Cancelled, never exec-threw (RATIONALE.md, "How is the rule of a
// failed run decided, and why in that order?").
func TestCallerCancelIsCancellation(t *testing.T) {
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		for name, ctx := range map[string]func() (context.Context, context.CancelFunc){
			"deadline": func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 200*time.Millisecond)
			},
			"cancel": func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				return ctx, cancel
			},
		} {
			ctx, cancel := ctx()
			a := p.Call(ctx, wire.Call{V: 1, CallID: "c", Tool: "sleep", DescriptorID: "guest",
				Args: json.RawMessage(`{"ms":600000}`), BoundsEcho: p.d.Bounds.Canonical()})
			cancel()
			if a.OK || a.Refused != wire.Cancelled {
				t.Errorf("%s: %+v, want %s", name, a, wire.Cancelled)
			}
		}
	})
}

func TestMemoryExhausted(t *testing.T) {
	b := defaultBounds()
	b.MemoryMiB = 32
	b.TimeoutMs = 20000
	forStyles(t, Config{}, b, func(t *testing.T, p *Program) {
		wantOK(t, call(t, p, "echo", `{}`)) // the module itself fits in 32 MiB
		a := call(t, p, "membomb", `{}`)
		wantRule(t, a, wire.MemoryExhausted)
		// The why names the bound in MiB and the size asked for, over it.
		var asked int
		if _, err := fmt.Sscanf(a.Why, "the tool asked for %d MiB of memory, over bounds.memoryMiB 32", &asked); err != nil || asked <= 32 {
			t.Errorf("memory-exhausted why %q", a.Why)
		}
		wantOK(t, call(t, p, "echo", `{}`)) // and the program is still usable
	})
}

func TestExecThrew(t *testing.T) {
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		for _, c := range [][2]string{
			{"trap", `{"kind":"nil"}`}, {"trap", `{"kind":"div"}`}, {"trap", `{"kind":"panic"}`},
			{"exit3", `{}`}, {"fail", `{}`}, {"notobject", `{}`},
		} {
			wantRule(t, call(t, p, c[0], c[1]), wire.ExecThrew)
		}
	})
}

func TestExecThrewCommandOutput(t *testing.T) {
	r := newRuntime(t, Config{})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	wantRule(t, call(t, p, "nojson", `{}`), wire.ExecThrew)
	wantRule(t, call(t, p, "twojson", `{}`), wire.ExecThrew)
	for _, file := range []string{"unreachable.wasm", "silent.wasm"} {
		d := guestDescriptor("tiny", defaultBounds())
		wantRule(t, call(t, load(t, r, d, testkit.Fixture(t, file)), "echo", `{}`), wire.ExecThrew)
	}
}

func TestOutputTooLarge(t *testing.T) {
	b := defaultBounds()
	b.MaxOutputBytes = 1000
	b.TimeoutMs = 120000 // writing 10 MB takes seconds on a loaded machine: the output bound must decide
	forStyles(t, Config{}, b, func(t *testing.T, p *Program) {
		// bigout n writes an n-byte object; a command adds a newline.
		m := wantOK(t, call(t, p, "bigout", `{"n":999}`))
		if len(m["s"].(string)) != 991 {
			t.Fatalf("bigout wrote %d characters", len(m["s"].(string)))
		}
		a := call(t, p, "bigout", `{"n":1001}`)
		wantRule(t, a, wire.OutputTooLarge)
		wantRefusalWhy(t, a, "the tool's output was 1001 bytes, over bounds.maxOutputBytes 1000")
		// Reading stopped at the bound: the size is not known.
		a = call(t, p, "bigout", `{"n":10000000}`)
		wantRule(t, a, wire.OutputTooLarge)
		wantRefusalWhy(t, a, "the tool's output was more than 1000 bytes (bounds.maxOutputBytes)")
	})
}

func TestBoundsMismatch(t *testing.T) {
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		call := func(echo string) wire.Answer {
			return p.Call(context.Background(), wire.Call{V: 1, CallID: "c", Tool: "echo",
				DescriptorID: "guest", Args: json.RawMessage(`{}`), BoundsEcho: json.RawMessage(echo)})
		}
		// Same bounds, other key order and spacing: canonical JSON equal.
		ok := call(`{"roots":[],"allowedHosts":[],"maxRequests":0,"maxOutputBytes":1048576,"memoryMiB":64, "timeoutMs":5000}`)
		wantOK(t, ok)
		listed, _ := json.Marshal(p.d.Bounds)
		wantOK(t, call(string(listed)))
		for _, echo := range []string{
			`{"roots":[],"allowedHosts":[],"maxRequests":0,"maxOutputBytes":1048576,"memoryMiB":64,"timeoutMs":5001}`,
			`{"allowedHosts":[],"maxRequests":0,"maxOutputBytes":1048576,"memoryMiB":64,"timeoutMs":5000}`,
			`{}`, `not json`, ``,
		} {
			a := call(echo)
			mustParse(t, a)
			wantRule(t, a, wire.BoundsMismatch)
			if a.Budget == nil || a.Budget.RequestsUsed != 0 {
				t.Fatalf("bounds-mismatch budget %+v", a.Budget)
			}
		}
	})
}

func TestUnknownTool(t *testing.T) {
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		a := call(t, p, "no_such_tool", `{}`)
		wantRule(t, a, wire.UnknownTool)
		wantRefusalWhy(t, a, `the descriptor "guest" declares no tool "no_such_tool"`)
	})
}

func TestArgsInvalid(t *testing.T) {
	r := newRuntime(t, Config{})
	d := guestDescriptor("guest", defaultBounds())
	d.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`)
	p := load(t, r, d, testkit.Fixture(t, "guest-reactor.wasm"))
	wantOK(t, call(t, p, "echo", `{"n":3}`))
	static := wire.ArgsInvalid.Why()
	for _, c := range []struct{ args, why string }{
		{`{}`, "/n: required"}, {`{"n":"3"}`, "/n: type"}, {`{"n":0}`, "/n: minimum"},
		{`{"n":1,"x":2}`, `unexpected key "x"; allowed: n`},
		{`{"x":"secret-value"}`, `unexpected key "x"; allowed: n; /n: required`},
		{`{"n":1,"n":2}`, static},
		{`[1]`, static}, {`"s"`, static}, {`{"n":1`, static}, {"{\"n\":1,\"s\":\"\xff\"}", static},
	} {
		a := call(t, p, "echo", c.args)
		wantRule(t, a, wire.ArgsInvalid)
		if a.Budget == nil || *a.Budget != (wire.Budget{}) {
			t.Fatalf("args-invalid budget %+v", a.Budget)
		}
		if a.Why != c.why {
			t.Errorf("%s: why %q, want %q", c.args, a.Why, c.why)
		}
	}
}

// wantRefusalWhy fails unless a's why is want.
func wantRefusalWhy(t *testing.T, a wire.Answer, want string) {
	t.Helper()
	if a.Why != want {
		t.Errorf("why %q, want %q", a.Why, want)
	}
}

func TestOverloaded(t *testing.T) {
	g := newGate(t)
	forStyles(t, Config{MaxConcurrent: 1}, g.bounds(), func(t *testing.T, p *Program) {
		done := g.hold(t, p)
		a := call(t, p, "echo", `{}`)
		wantRule(t, a, wire.Overloaded)
		wantRefusalWhy(t, a, "the descriptor already runs exec.max_concurrent 1 calls")
		g.open()
		wantOK(t, <-done)
		wantOK(t, call(t, p, "echo", `{}`))
	})
}

// gate is a server whose responses wait until the test opens it, so a
// call fetching from it stays in flight for exactly as long as the test
// needs, however slow the machine.
type gate struct {
	srv     *httptest.Server
	arrived atomic.Int32 // requests that reached the handler
	mu      sync.Mutex
	release chan struct{}
	once    *sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{release: make(chan struct{}), once: &sync.Once{}}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.arrived.Add(1)
		g.mu.Lock()
		release := g.release
		g.mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "opened")
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// bounds allow one fetch to the gate.
func (g *gate) bounds() wire.Bounds {
	return fetchBounds(1, strings.TrimPrefix(g.srv.URL, "http://"))
}

// hold closes the gate and starts a call that fetches from it; it returns
// once the call holds its concurrency slot. The answer arrives on the
// channel after open.
func (g *gate) hold(t *testing.T, p *Program) <-chan wire.Answer {
	release, once := make(chan struct{}), &sync.Once{}
	g.mu.Lock()
	g.release, g.once = release, once
	g.mu.Unlock()
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	done := make(chan wire.Answer, 1)
	go func() {
		done <- p.Call(context.Background(), wire.Call{V: 1, CallID: "held", Tool: "fetch",
			DescriptorID: p.d.DescriptorID, Args: json.RawMessage(`{"url":"` + g.srv.URL + `"}`), BoundsEcho: p.d.Bounds.Canonical()})
	}()
	testkit.Eventually(t, "the held call to take its slot", func() bool { return len(p.sem) == 1 })
	return done
}

func (g *gate) open() {
	g.mu.Lock()
	release, once := g.release, g.once
	g.mu.Unlock()
	once.Do(func() { close(release) })
}

// TestExecutorPanicIsExecThrew: a bug that panics inside a call is not
// recovered by the program (wire.Contain, run by the router and the
// channel door, is the one catcher), yet it leaves nothing held: the
// concurrency slot and the in-flight count are released as it unwinds.
func TestExecutorPanicIsExecThrew(t *testing.T) {
	forStyles(t, Config{}, defaultBounds(), func(t *testing.T, p *Program) {
		for _, stage := range []string{"check", "run"} {
			p.testHook = func(s string) {
				if s == stage {
					panic("injected executor bug")
				}
			}
			c := wire.Call{V: 1, CallID: "call_1", Tool: "echo", DescriptorID: p.d.DescriptorID,
				Args: json.RawMessage(`{}`), BoundsEcho: p.d.Bounds.Canonical()}
			a, panicked := wire.Contain(context.Background(), p, c)
			wantRule(t, a, wire.ExecThrew)
			if panicked == nil {
				t.Fatalf("stage %s: the panic was recovered below wire.Contain", stage)
			}
		}
		p.testHook = nil
		wantOK(t, call(t, p, "echo", `{}`))
		if len(p.sem) != 0 || p.life.inflight != 0 {
			t.Fatal("a panicking call kept its concurrency slot")
		}
	})
}

func TestRetireWaitsForInFlight(t *testing.T) {
	g := newGate(t)
	forStyles(t, Config{}, g.bounds(), func(t *testing.T, p *Program) {
		done := g.hold(t, p)
		closed := make(chan error)
		go func() { closed <- p.Close(context.Background()) }()
		testkit.Eventually(t, "Close to retire the program", func() bool { p.life.mu.Lock(); defer p.life.mu.Unlock(); return p.life.retired != "" })
		wantRule(t, call(t, p, "echo", `{}`), wire.UnattributedCall)
		// That Close cannot return with the call in flight is proved
		// without a clock by TestRetireBoundedByContext; here the held call
		// must still complete on its instance once released.
		g.open()
		a := <-done
		mustParse(t, a)
		if m := wantOK(t, a); m["body"] != "opened" {
			t.Fatalf("held call observed %v", m)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		wantRule(t, call(t, p, "echo", `{}`), wire.UnattributedCall)
	})
}

func TestRetireBoundedByContext(t *testing.T) {
	g := newGate(t)
	r := newRuntime(t, Config{})
	p := load(t, r, guestDescriptor("guest", g.bounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	done := g.hold(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want deadline exceeded", err)
	}
	if p.pool.closed {
		t.Fatal("pool released under a call in flight")
	}
	g.open()
	wantOK(t, <-done) // the call still finished, then released the program
	if p.pool.get() != nil || !p.pool.closed {
		t.Fatal("pool not released after the last call left")
	}
}

func TestRuntimeCloseShutsDown(t *testing.T) {
	r, err := NewRuntime(context.Background(), Config{CacheDir: sharedCache})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Load(context.Background(), guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "silent.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRule(t, call(t, p, "echo", `{}`), wire.ShuttingDown)
	if _, err := r.Load(context.Background(), guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "silent.wasm")); !errors.Is(err, ErrRuntimeClosed) {
		t.Fatalf("Load after Close = %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeCloseLateCancelsCalls: when Close's context has ended with
// calls in flight, Close cancels them and closes the engine only once
// they have left: wazero's module resources are not safe to close under
// a running call (the race detector caught it). The calls answer
// shutting-down and Close returns ctx's cause (RATIONALE.md, "What does
// Close do when its context ends?"). One call spins in wasm, one waits in
// the fetch host function; the spinning one starts first, so by the time
// the fetch reaches the gate it is most likely running its guest.
func TestRuntimeCloseLateCancelsCalls(t *testing.T) {
	g := newGate(t)
	b := g.bounds()
	b.TimeoutMs = wire.MaxTimeoutMs // only Close may end these calls
	forStyles(t, Config{}, b, func(t *testing.T, p *Program) {
		spinning := make(chan wire.Answer, 1)
		go func() { spinning <- call(t, p, "loop", `{}`) }()
		testkit.Eventually(t, "the loop to take its slot", func() bool { return len(p.sem) == 1 })
		before := g.arrived.Load()
		fetching := g.hold(t, p)
		testkit.Eventually(t, "the fetch to reach the gate", func() bool { return g.arrived.Load() > before })
		errGrace := errors.New("grace over")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errGrace)
		if err := p.rt.Close(ctx); !errors.Is(err, errGrace) {
			t.Fatalf("Close = %v, want its context's cause", err)
		}
		g.open() // a fetch Close did not cancel would wait here for its deadline
		wantRule(t, <-spinning, wire.ShuttingDown)
		a := <-fetching
		mustParse(t, a)
		wantRule(t, a, wire.ShuttingDown)
	})
}

func TestReactorReuseAndDiscard(t *testing.T) {
	r := newRuntime(t, Config{PoolSize: 1})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	count := func() float64 { return wantOK(t, call(t, p, "counter", `{}`))["calls"].(float64) }
	if a, b := count(), count(); a != 1 || b != 2 {
		t.Fatalf("pooled instance not reused: %v then %v", a, b)
	}
	wantRule(t, call(t, p, "fail", `{}`), wire.ExecThrew)
	if c := count(); c != 1 {
		t.Fatalf("failed instance was reused (counter %v)", c)
	}
	wantOK(t, call(t, p, "echo", `{}`))
}

func TestCommandIsFreshPerCall(t *testing.T) {
	r := newRuntime(t, Config{})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	for range 3 {
		if c := wantOK(t, call(t, p, "counter", `{}`))["calls"]; c != 1.0 {
			t.Fatalf("command instance reused: counter %v", c)
		}
	}
}

func debugLogger(buf *testkit.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestStderrBoundedAndLogged(t *testing.T) {
	var logs testkit.Buffer
	forStyles(t, Config{MaxStderrBytes: 100, Logger: debugLogger(&logs)}, defaultBounds(), func(t *testing.T, p *Program) {
		wantOK(t, call(t, p, "stderr", `{"n":100000}`))
		out := logs.String()
		if !strings.Contains(out, strings.Repeat("e", 100)+"…(truncated)") || strings.Contains(out, strings.Repeat("e", 101)) {
			t.Fatalf("stderr not kept to 100 bytes: %.300s", out)
		}
	})
}

func TestGuestLogBounded(t *testing.T) {
	var logs testkit.Buffer
	r := newRuntime(t, Config{Logger: debugLogger(&logs)})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	wantOK(t, call(t, p, "log", `{"msg":"hello from the guest","n":100}`))
	out := logs.String()
	if n := strings.Count(out, "hello from the guest"); n != maxLogLines {
		t.Fatalf("%d guest lines logged, want %d", n, maxLogLines)
	}
	for _, attr := range []string{"descriptor=guest", "tool=log", "callId=call_1", "guest log limit reached"} {
		if !strings.Contains(out, attr) {
			t.Fatalf("log lacks %q: %.300s", attr, out)
		}
	}
}

func TestCallEnvelopeEdges(t *testing.T) {
	r := newRuntime(t, Config{})
	p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	a := p.Call(context.Background(), wire.Call{CallID: "", Tool: "echo", DescriptorID: "guest",
		Args: json.RawMessage(`{}`), BoundsEcho: p.d.Bounds.Canonical()})
	mustParse(t, a)
	if a.CallID != wire.UnreadableCallID || a.Refused != wire.Malformed {
		t.Fatalf("empty callId answered %+v", a)
	}
	a = p.Call(context.Background(), wire.Call{CallID: "c", Tool: "echo", DescriptorID: "other",
		Args: json.RawMessage(`{}`), BoundsEcho: p.d.Bounds.Canonical()})
	wantRule(t, a, wire.UnattributedCall)
	// Absent args are the empty object.
	a = p.Call(context.Background(), wire.Call{CallID: "c", Tool: "echo", DescriptorID: "guest", BoundsEcho: p.d.Bounds.Canonical()})
	if !a.OK || string(a.Observed) != `{}` {
		t.Fatalf("absent args answered %+v", a)
	}
}
