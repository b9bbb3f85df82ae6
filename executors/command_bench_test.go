package executors

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/airlock/airlock/executors/baseline"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// The command benchmarks compare Program.Call of the guest fixture's echo
// built as a WASI command (guest.wasm: a fresh instance per call, args on
// stdin, the observation on stdout) with plain wazero running the same
// module the same way (executors/baseline). Run both in one go:
//
//	go test ./executors -run '^$' -bench 'CommandEcho$' -benchmem
//
// The ratio of the two is the executors' overhead on a command call
// (cmd/airlock/PERFORMANCE.md, "Command modules"). Besides ns/op each reports cpu-ns/op,
// the process's CPU time (every thread, the garbage collector's included)
// per call: on a machine shared with other work it moves far less than
// wall time.

const commandEchoArgs = `{"msg":"hello"}`

func benchCommandProgram(b *testing.B) *Program {
	r := newRuntime(b, Config{})
	p := load(b, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(b, "guest.wasm"))
	if p.style != styleCommand {
		b.Fatalf("guest.wasm loaded as %s", p.style)
	}
	return p
}

func commandEchoCall(p *Program) wire.Call {
	return wire.Call{V: 1, CallID: "call_1", Tool: "echo", DescriptorID: p.d.DescriptorID,
		Args: json.RawMessage(commandEchoArgs), BoundsEcho: p.d.Bounds.Canonical()}
}

func BenchmarkCommandEcho(b *testing.B) {
	p := benchCommandProgram(b)
	c := commandEchoCall(p)
	ctx := context.Background()
	if a := p.Call(ctx, c); !a.OK || string(a.Observed) != commandEchoArgs {
		b.Fatalf("echo answered %+v", a)
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if a := p.Call(ctx, c); !a.OK {
			b.Fatalf("echo answered %+v", a)
		}
	}
}

// BenchmarkRawWazeroCommandEcho is the floor: plain wazero with the same
// module compiled once (from the same compilation cache), and per call a
// module config with the tool as argv[0], the args on stdin and a buffer
// for stdout, instantiate (which runs _start) and close.
func BenchmarkRawWazeroCommandEcho(b *testing.B) {
	ctx := context.Background()
	raw, err := baseline.New(ctx, testkit.Fixture(b, "guest.wasm"), baseline.Options{CacheDir: sharedCache})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close(ctx) })
	if raw.Style() != baseline.Command {
		b.Fatalf("guest.wasm runs as %s", raw.Style())
	}
	args := []byte(commandEchoArgs)
	if out, err := raw.Call(ctx, "echo", args); err != nil || len(out) == 0 {
		b.Fatalf("raw echo: %q, %v", out, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := raw.Call(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
