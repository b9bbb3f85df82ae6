package channel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/channel/envclient"
	"github.com/airlock/airlock/broker/channel/rtt"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// BenchmarkCalls runs the same call (echo on the guest fixture's reactor
// build, same module, same bounds) two ways in one run: on the broker's
// own executors ("local") and through a paired environment over a
// loopback WebSocket ("channel"): router → remote → socket → envclient →
// door → executors → socket → remote. Between them it measures the
// floor's other half ("rtt", package rtt): one bare coder/websocket round
// trip on an established loopback connection, a frame the size of the call out and
// one the size of its answer back. Each reports calls/s and p50/p99
// latency; serial is one caller, parallel is 16 concurrent callers (for
// rtt, 16 round trips in flight on one connection, as the channel's are).
// The channel cases also report x-floor and x-floor-p50: the channel's
// time per call, and its median, over local + rtt of the same run
// (the performance target is at most 1.5). local-after-rtt shows what the
// local half of that floor spares: the same local call, timed right
// after a round trip instead of back to back.
//
//	go test -run '^$' -bench BenchmarkCalls -benchmem -benchtime 3s ./broker/channel/
func BenchmarkCalls(b *testing.B) {
	ctx := context.Background()
	rt, err := executors.NewRuntime(ctx, executors.Config{CacheDir: b.TempDir(), MaxConcurrent: 64, PoolSize: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	module := testkit.Fixture(b, "guest-reactor.wasm")
	d := wire.Descriptor{DescriptorID: "fx", Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Bounds: wire.Bounds{TimeoutMs: 5000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}}
	prog, err := rt.Load(ctx, d, module)
	if err != nil {
		b.Fatal(err)
	}
	defer prog.Close(ctx)
	table := executors.NewTable()
	table.Put(prog)
	reg := metrics.New()
	quiet := slog.New(slog.DiscardHandler)

	local := calls.NewRouter(reg, quiet, calls.Local{Table: table})
	remote, stop := pairedEnvironment(b, table, reg)
	defer stop()

	call := wire.Call{V: 1, CallID: "bench-1", Tool: "echo", DescriptorID: "fx", Args: json.RawMessage(`{"text":"hello, airlock"}`), BoundsEcho: d.Bounds.Canonical()}
	// The frames the channel puts on the socket for this call, under a
	// broker id of the length a long run reaches.
	out := call
	out.CallID = "b_1000000"
	answer := local.Call(ctx, out)
	if !answer.OK {
		b.Fatalf("local call refused %s", answer.Refused)
	}
	floor, err := rtt.New(ctx, len(wire.AnswerFrame(answer)))
	if err != nil {
		b.Fatal(err)
	}
	defer floor.Close()
	callFrame := wire.CallFrame(out)

	got := map[string]figure{}
	for _, mode := range []string{"serial", "parallel"} {
		parallel := mode == "parallel"
		b.Run("local/"+mode, func(b *testing.B) {
			got["local"] = measure(b, parallel, nil, func() bool { return routed(b, local, call) })
		})
		b.Run("rtt/"+mode, func(b *testing.B) {
			got["rtt"] = measure(b, parallel, nil, func() bool { return roundTrip(b, floor, callFrame) })
		})
		if !parallel {
			// The local call again, timed right after one (untimed) round
			// trip on the same goroutine, as the environment's call runs
			// after its network work: back to back, a wasm call runs on
			// hot caches, which no channel call can (cmd/airlock/internal/load/RATIONALE.md, "Why
			// does the paired shape's rtt echo run in a process of its
			// own?"). Not part of the floor; it shows what the floor's
			// local half spares.
			b.Run("local-after-rtt/serial", func(b *testing.B) {
				measure(b, false, func() { roundTrip(b, floor, callFrame) }, func() bool { return routed(b, local, call) })
			})
		}
		b.Run("channel/"+mode, func(b *testing.B) {
			ch := measure(b, parallel, nil, func() bool { return routed(b, remote, call) })
			l, r := got["local"], got["rtt"]
			if l.perOp == 0 || r.perOp == 0 {
				return // run alone: no floor measured
			}
			b.ReportMetric(ch.perOp/(l.perOp+r.perOp), "x-floor")
			b.ReportMetric(ch.p50/(l.p50+r.p50), "x-floor-p50")
		})
	}
}

// figure is what one case measured: time per call (wall time over calls,
// so with 16 callers it is the inverse of throughput) and median latency,
// both in µs.
type figure struct{ perOp, p50 float64 }

// routed makes one call through r; every call must succeed.
func routed(b *testing.B, r *calls.Router, call wire.Call) bool {
	a := r.Call(context.Background(), call)
	if !a.OK {
		b.Errorf("call refused %s", a.Refused)
	}
	return a.OK
}

// roundTrip is one round trip on the floor (package rtt); it must succeed.
func roundTrip(b *testing.B, floor *rtt.Floor, frame []byte) bool {
	if err := floor.RoundTrip(context.Background(), frame); err != nil {
		b.Error(err)
		return false
	}
	return true
}

// pairedEnvironment starts a channel component on loopback, pairs an
// environment and connects an envclient serving table; it returns a
// router whose only source is the channel.
func pairedEnvironment(b *testing.B, table *executors.Table, reg *metrics.Registry) (*calls.Router, func()) {
	data := b.TempDir()
	ch := channel.New(channel.Options{Config: config.Channel{HelloBoundMs: 5000, GraceMs: 1000, MaxInflight: 1024}, Data: data, Metrics: reg})
	mux := http.NewServeMux()
	ch.Mount(mux)
	srv := httptest.NewServer(mux)
	bearer, err := pairing.Add(data, "bench", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Reload(); err != nil {
		b.Fatal(err)
	}
	client, err := envclient.New(envclient.Options{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/channel",
		Bearer: func() (string, error) { return bearer, nil }, Executor: table, Catalog: table.Descriptors})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Run(ctx, 5*time.Second) }()
	testkit.Eventually(b, "the environment to connect", func() bool { _, ok := ch.Lookup("fx"); return ok })
	router := calls.NewRouter(reg, slog.New(slog.DiscardHandler))
	router.AddSource(ch)
	return router, func() {
		cancel()
		<-done
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = ch.Close(cctx)
		srv.Close()
	}
}

// measure runs b.N operations (one caller, or 16 in parallel) and reports
// throughput and latency percentiles; op reports whether it succeeded,
// and the first failure stops its caller. before, when set, runs ahead
// of each op, untimed in the percentiles (but not in calls/s).
func measure(b *testing.B, parallel bool, before func(), op func() bool) figure {
	var mu sync.Mutex
	var all []time.Duration
	run := func(next func() bool) {
		var mine []time.Duration
		for next() {
			if before != nil {
				before()
			}
			start := time.Now()
			ok := op()
			mine = append(mine, time.Since(start))
			if !ok {
				break
			}
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	if parallel {
		b.SetParallelism(8) // 8 × GOMAXPROCS callers
		b.RunParallel(func(pb *testing.PB) { run(pb.Next) })
	} else {
		n := 0
		run(func() bool { n++; return n <= b.N })
	}
	b.StopTimer()
	slices.Sort(all)
	if len(all) == 0 {
		return figure{}
	}
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	return figure{perOp: float64(b.Elapsed().Microseconds()) / float64(len(all)), p50: pct(0.50)}
}
