package executors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

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
		Args: json.RawMessage(`{"path":"` + benchNote + `"}`), BoundsEcho: p.boundsCanon}
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

// rawNotes is plain wazero, no Airlock code: one runtime with WASI, the
// module compiled once, and per call a fresh instance (the module is a
// reactor, so instantiate, _initialize, airlock_alloc, airlock_call) with
// the notes directory mounted.
type rawNotes struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	args     []byte
}

func newRawNotes(b *testing.B) *rawNotes {
	_, module, notes := benchNotes(b)
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	b.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, module)
	if err != nil {
		b.Fatal(err)
	}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").
		WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(notes, "/notes")).
		WithSysWalltime().WithSysNanotime()
	raw := &rawNotes{rt: rt, compiled: compiled, config: cfg, args: []byte(`{"path":"` + benchNote + `"}`)}
	if out := raw.call(b); len(out) < 2 || out[0] != 0 {
		b.Fatalf("raw read_notes answered %q", out)
	}
	return raw
}

func (r *rawNotes) call(b *testing.B) []byte {
	ctx := context.Background()
	mod, err := r.rt.InstantiateModule(ctx, r.compiled, r.config)
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close(ctx)
	return r.invoke(b, mod)
}

// invoke is one airlock_alloc + airlock_call on an instance.
func (r *rawNotes) invoke(b *testing.B, mod api.Module) []byte {
	ctx := context.Background()
	tool := "read_notes"
	res, err := mod.ExportedFunction("airlock_alloc").Call(ctx, uint64(len(tool)+len(r.args)))
	if err != nil {
		b.Fatal(err)
	}
	ptr := api.DecodeU32(res[0])
	mod.Memory().WriteString(ptr, tool)
	mod.Memory().Write(ptr+uint32(len(tool)), r.args)
	res, err = mod.ExportedFunction("airlock_call").Call(ctx, uint64(ptr), uint64(len(tool)),
		uint64(ptr)+uint64(len(tool)), uint64(len(r.args)))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	return append([]byte(nil), out...)
}

func BenchmarkRawWazeroReadNotes(b *testing.B) {
	raw := newRawNotes(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		raw.call(b)
	}
}

func BenchmarkRawWazeroReadNotesParallel(b *testing.B) {
	raw := newRawNotes(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			raw.call(b)
		}
	})
}

// BenchmarkRawWazeroReadNotesReused is plain wazero on one instance
// reused for every call: the floor that pooling approaches, so the
// difference to BenchmarkReadNotes is the executors' own per-call cost.
func BenchmarkRawWazeroReadNotesReused(b *testing.B) {
	raw := newRawNotes(b)
	ctx := context.Background()
	mod, err := raw.rt.InstantiateModule(ctx, raw.compiled, raw.config)
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if out := raw.invoke(b, mod); len(out) < 2 || out[0] != 0 {
			b.Fatalf("raw read_notes answered %q", out)
		}
	}
}
