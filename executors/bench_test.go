package executors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock/airlock/executors/baseline"
	"github.com/airlock/airlock/executors/wire"
)

// The benchmarks compare Program.Call of the bundled notes read_notes
// with the cheapest plain-wazero way to run the same module once: the
// executors' overhead and the pool's saving, side by side.

const benchNote = "welcome.md"

// benchNotes returns the bundled notes descriptor and module and a notes
// directory holding one note.
func benchNotes(b *testing.B) (wire.Descriptor, []byte, string) {
	dir := filepath.Join("..", "plugins", "bundled", "notes")
	var m struct {
		ID      string      `json:"id"`
		Version string      `json:"version"`
		Module  string      `json:"module"`
		SHA256  string      `json:"sha256"`
		Tools   []wire.Tool `json:"tools"`
		Bounds  wire.Bounds `json:"bounds"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "plugin.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := wire.DecodeStrict(data, &m); err != nil {
		b.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join(dir, m.Module))
	if err != nil {
		b.Fatal(err)
	}
	notes := b.TempDir()
	if err := os.WriteFile(filepath.Join(notes, benchNote), []byte("# Welcome\n\nA note to read.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return wire.Descriptor{DescriptorID: m.ID, Tools: m.Tools, Bounds: m.Bounds}, module, notes
}

func benchProgram(b *testing.B) *Program {
	d, module, notes := benchNotes(b)
	r := newRuntime(b, Config{Roots: map[string]string{"notes": notes}})
	p := load(b, r, d, module)
	c := readNotesCall(p)
	if a := p.Call(context.Background(), c); !a.OK {
		b.Fatalf("read_notes answered %+v", a)
	}
	return p
}

func readNotesCall(p *Program) wire.Call {
	return wire.Call{V: 1, CallID: "call_1", Tool: "read_notes", DescriptorID: p.d.DescriptorID,
		Args: json.RawMessage(`{"path":"` + benchNote + `"}`), BoundsEcho: p.d.Bounds.Canonical()}
}

func BenchmarkReadNotes(b *testing.B) {
	p := benchProgram(b)
	c := readNotesCall(p)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if a := p.Call(context.Background(), c); !a.OK {
			b.Fatalf("read_notes answered %+v", a)
		}
	}
}

func BenchmarkReadNotesParallel(b *testing.B) {
	p := benchProgram(b)
	c := readNotesCall(p)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if a := p.Call(context.Background(), c); !a.OK {
				b.Errorf("read_notes answered %+v", a)
				return
			}
		}
	})
}

// newRawNotes is plain wazero, no Airlock code (executors/baseline): one
// runtime with WASI, the module compiled once, and per call a fresh
// instance (the module is a reactor, so instantiate, _initialize,
// airlock_alloc, airlock_call) with the notes directory mounted.
func newRawNotes(b *testing.B) *baseline.Runner {
	_, module, notes := benchNotes(b)
	ctx := context.Background()
	raw, err := baseline.New(ctx, module, baseline.Options{Roots: map[string]string{"notes": notes}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close(ctx) })
	if _, err := raw.Call(ctx, "read_notes", rawNotesArgs); err != nil {
		b.Fatalf("raw read_notes: %v", err)
	}
	return raw
}

var rawNotesArgs = []byte(`{"path":"` + benchNote + `"}`)

func BenchmarkRawWazeroReadNotes(b *testing.B) {
	raw := newRawNotes(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := raw.Call(ctx, "read_notes", rawNotesArgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawWazeroReadNotesParallel(b *testing.B) {
	raw := newRawNotes(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := raw.Call(ctx, "read_notes", rawNotesArgs); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRawWazeroReadNotesReused is plain wazero on one instance
// reused for every call: the floor that pooling approaches, so the
// difference to BenchmarkReadNotes is the executors' own per-call cost.
func BenchmarkRawWazeroReadNotesReused(b *testing.B) {
	ctx := context.Background()
	inst := reusedRawNotes(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := inst.Call(ctx, "read_notes", rawNotesArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// RawNotesHTTPFloor is newRawNotes' runner behind baseline.HTTPFloor,
// closed when the benchmark ends, for BenchmarkRawWazeroReadNotesHTTP
// (in executors_test, beside the broker's HTTP benchmarks), with the
// args it must be called with.
func RawNotesHTTPFloor(b *testing.B) (*baseline.HTTPFloor, []byte) {
	floor, err := newRawNotes(b).HTTPFloor("read_notes")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = floor.Close(context.Background()) })
	return floor, rawNotesArgs
}

// reusedRawNotes is one plain wazero instance of the notes module, closed
// when the benchmark ends.
func reusedRawNotes(b *testing.B) *baseline.Instance {
	raw := newRawNotes(b)
	ctx := context.Background()
	inst, err := raw.NewInstance(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = inst.Close(ctx) })
	return inst
}
