package executors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// holdCompiles takes the runtime's compile turn, so every module Prepare
// starts waits, until the returned func passes it on.
func holdCompiles(t *testing.T, r *Runtime) (release func()) {
	t.Helper()
	if !r.compiles.wait(context.Background(), nil) {
		t.Fatal("no compile turn")
	}
	return r.compiles.next
}

// prepare is Prepare that fails t, closing the program with the test.
func prepare(t *testing.T, r *Runtime, d wire.Descriptor, module []byte) *Program {
	t.Helper()
	p, err := r.Prepare(context.Background(), d, module)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// A call to a program whose module is not compiled yet waits for it
// within its time bound: past it, exec-timeout, its why saying the module
// was still compiling;
// once compiled, the call runs. Checks that need no module answer at once.
func TestCallWaitsForCompilation(t *testing.T) {
	r := newRuntime(t, Config{})
	release := holdCompiles(t, r)
	b := defaultBounds()
	b.TimeoutMs = 50
	short := prepare(t, r, guestDescriptor("short", b), testkit.Fixture(t, "guest.wasm"))
	p := prepare(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest.wasm"))

	a := call(t, short, "echo", `{"a":1}`)
	wantRule(t, a, wire.ExecTimeout)
	if a.Why != wire.CompilingWhy(b.TimeoutMs) {
		t.Errorf("why %q", a.Why)
	}
	wantRule(t, call(t, p, "nope", `{}`), wire.UnknownTool)
	wantRule(t, call(t, p, "echo", `[1]`), wire.ArgsInvalid)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Ready(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ready before compilation: %v", err)
	}

	release()
	must(t, p.Ready(context.Background()))
	if a := call(t, p, "echo", `{"a":1}`); !a.OK || string(a.Observed) != `{"a":1}` {
		t.Fatalf("after compilation: %+v", a)
	}
}

// A module that compilation's checks refuse is refused by name by Ready,
// and a call that waited for it is refused unattributed-call: its
// descriptor was never admitted.
func TestPreparedModuleRefused(t *testing.T) {
	r := newRuntime(t, Config{})
	release := holdCompiles(t, r)
	p := prepare(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "imports-env.wasm"))
	answered := make(chan wire.Answer, 1)
	go func() { answered <- call(t, p, "echo", `{}`) }()
	release()
	wantReason(t, p.Ready(context.Background()), ReasonImportsRefused)
	wantRule(t, testkit.Receive(t, "the waiting call's answer", answered), wire.UnattributedCall)
}

// A program closed before its module compiled is never compiled: Ready
// says ErrRetired, calls waiting for it are refused as after Close, and
// nothing is left running (TestMain's goleak).
func TestCloseBeforeCompiled(t *testing.T) {
	r := newRuntime(t, Config{})
	release := holdCompiles(t, r)
	defer release()
	p := prepare(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	answered := make(chan wire.Answer, 1)
	go func() { answered <- call(t, p, "echo", `{}`) }()
	testkit.Eventually(t, "the call is in flight", func() bool {
		p.life.mu.Lock()
		defer p.life.mu.Unlock()
		return p.life.inflight == 1
	})
	must(t, p.Close(context.Background()))
	if err := p.Ready(context.Background()); !errors.Is(err, ErrRetired) {
		t.Fatalf("Ready after Close: %v", err)
	}
	wantRule(t, testkit.Receive(t, "the waiting call's answer", answered), wire.UnattributedCall)
}

// Closing the runtime while a module compiles stops the compilation
// (between two functions) and frees everything; a module queued behind it
// is never compiled.
func TestRuntimeCloseWhileCompiling(t *testing.T) {
	r, err := NewRuntime(context.Background(), Config{CacheDir: t.TempDir()}) // nothing cached: a real compilation
	must(t, err)
	p, err := r.Prepare(context.Background(), guestDescriptor("a", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	must(t, err)
	q, err := r.Prepare(context.Background(), guestDescriptor("b", defaultBounds()), testkit.Fixture(t, "guest-reactor.wasm"))
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, r.Close(ctx))
	for _, prog := range []*Program{p, q} {
		select {
		case <-prog.ready:
		default:
			t.Fatalf("%s: still compiling after Close", prog.d.DescriptorID)
		}
	}
	if err := q.Ready(context.Background()); err != nil && !errors.Is(err, ErrRetired) {
		t.Errorf("queued module: %v", err)
	}
	wantRule(t, call(t, p, "echo", `{}`), wire.ShuttingDown)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A program a call waits for is compiled next, ahead of those prepared
// before it.
func TestWaitedForCompilesFirst(t *testing.T) {
	r := newRuntime(t, Config{})
	release := holdCompiles(t, r)
	a := prepare(t, r, guestDescriptor("a", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	b := prepare(t, r, guestDescriptor("b", defaultBounds()), testkit.Fixture(t, "guest.wasm"))
	testkit.Eventually(t, "both queued", func() bool {
		r.compiles.mu.Lock()
		defer r.compiles.mu.Unlock()
		return len(r.compiles.waiting) == 2
	})
	answered := make(chan wire.Answer, 1)
	go func() { answered <- call(t, b, "echo", `{}`) }()
	testkit.Eventually(t, "the call waits for b", b.wanted.Load)
	release() // passes the turn on, to b: a gets one only once b is done
	select {
	case <-b.turn:
	default:
		t.Fatal("the turn went to a, prepared first, not to b, which a call waits for")
	}
	if a := testkit.Receive(t, "the call's answer", answered); !a.OK {
		t.Fatalf("call: %+v", a)
	}
	must(t, a.Ready(context.Background()))
}
