package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// BenchmarkRouterReadNotes is the bundled notes read_notes, pooled,
// through Router.Call: receipts off, on with fsync batch, and on with
// fsync always (cmd/airlock/PERFORMANCE.md compares them).
func BenchmarkRouterReadNotes(b *testing.B) {
	for _, mode := range []string{"off", receipts.FsyncBatch, receipts.FsyncAlways} {
		b.Run("receipts="+mode, func(b *testing.B) {
			r, c := benchRouter(b, mode)
			ctx := WithDoor(context.Background(), receipts.DoorV1)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if a := r.Call(ctx, c); !a.OK {
					b.Fatalf("read_notes answered %+v", a)
				}
			}
		})
	}
}

// BenchmarkRouterReceiptCost calls read_notes through two routers, one
// without receipts and one with them (fsync batch, then always), turn
// about, call by call, so that both see the same load from whatever else
// the machine runs; it reports the ratio of their median call times
// (receipts/off), the figure cmd/airlock/PERFORMANCE.md holds to 1.05×
// under batch. Its floor is the router without receipts followed, in
// each call, by one write of a receipt's line to a file: the least a
// receipt written before its answer leaves can cost.
func BenchmarkRouterReceiptCost(b *testing.B) {
	for _, mode := range []string{floorMode, receipts.FsyncBatch, receipts.FsyncAlways} {
		b.Run("receipts="+mode, func(b *testing.B) {
			plain, c := benchRouter(b, "off")
			recording, write := plain, func() {}
			if mode == floorMode {
				write = lineWriter(b)
			} else {
				recording, _ = benchRouter(b, mode)
			}
			ctx := WithDoor(context.Background(), receipts.DoorV1)
			var took [2][]time.Duration // off, on
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for j := range 2 {
					k := (i + j) % 2 // who goes first alternates
					r := plain
					if k == 1 {
						r = recording
					}
					start := time.Now()
					if a := r.Call(ctx, c); !a.OK {
						b.Fatalf("read_notes answered %+v", a)
					}
					if k == 1 {
						write()
					}
					took[k] = append(took[k], time.Since(start))
				}
			}
			on, off := median(took[1]), median(took[0])
			b.ReportMetric(float64(on)/float64(off), "receipts/off")
			b.ReportMetric(float64(on-off), "receipt-ns")
		})
	}
}

// floorMode names BenchmarkRouterReceiptCost's floor.
const floorMode = "floor"

// lineWriter appends a line the size of a call's receipt to a file of its
// own at each call, with one write as Log.Append makes.
func lineWriter(b *testing.B) func() {
	f, err := os.Create(filepath.Join(b.TempDir(), "floor.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	line := append(bytes.Repeat([]byte("x"), receiptLineBytes-1), '\n')
	var size int64
	return func() {
		n, err := f.WriteAt(line, size)
		if err != nil {
			b.Fatal(err)
		}
		size += int64(n)
	}
}

// receiptLineBytes is about the length of a read_notes call's receipt.
const receiptLineBytes = 560

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// benchRouter is a router over the bundled plugins, with a receipt log
// when mode is an fsync policy, and a read_notes call it answers.
func benchRouter(b *testing.B, mode string) (*Router, wire.Call) {
	notes, data := b.TempDir(), b.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Welcome\n\nA note to read.\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{Flags: map[string]any{"data": data}, Roots: map[string]string{"notes": notes}})
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	local, err := plugins.Open(ctx, cfg, logger, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = local.Close(ctx) })
	if err := local.Catalog.WaitCompiled(ctx); err != nil {
		b.Fatal(err)
	}
	r := NewRouter(nil, logger, Local{Table: local.Table})
	if mode != "off" {
		log, err := receipts.Open(receipts.Options{Dir: data, Fsync: mode, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = log.Close() })
		r.Record(log, false)
	}
	rt, ok := r.resolve("notes")
	if !ok {
		b.Fatal("notes is not admitted")
	}
	c := wire.Call{V: 1, CallID: "call_1", Tool: "read_notes", DescriptorID: "notes",
		Args: json.RawMessage(`{"path":"welcome.md"}`), BoundsEcho: rt.Descriptor.Bounds.Canonical()}
	if a := r.Call(ctx, c); !a.OK {
		b.Fatalf("read_notes answered %+v", a)
	}
	return r, c
}
