package channel_test

import (
	"context"
	"encoding/json"
	"fmt"
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
// door → executors → socket → remote. Each reports calls/s and p50/p99
// latency; serial is one caller, parallel is 16 concurrent callers.
//
//	go test -run '^$' -bench BenchmarkCalls -benchtime 3s ./broker/channel/
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

	call := wire.Call{V: 1, Tool: "echo", DescriptorID: "fx", Args: json.RawMessage(`{"text":"hello, airlock"}`), BoundsEcho: d.Bounds.Canonical()}
	for _, r := range []struct {
		name   string
		router *calls.Router
	}{{"local", local}, {"channel", remote}} {
		b.Run(r.name+"/serial", func(b *testing.B) { measure(b, r.router, call, false) })
		b.Run(r.name+"/parallel", func(b *testing.B) { measure(b, r.router, call, true) })
	}
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

// measure runs b.N calls (one caller, or 16 in parallel) and reports
// throughput and latency percentiles; every call must succeed.
func measure(b *testing.B, r *calls.Router, call wire.Call, parallel bool) {
	var mu sync.Mutex
	var all []time.Duration
	run := func(next func() bool) {
		var mine []time.Duration
		c := call
		for i := 0; next(); i++ {
			c.CallID = fmt.Sprint("bench-", i)
			start := time.Now()
			a := r.Call(context.Background(), c)
			mine = append(mine, time.Since(start))
			if !a.OK {
				b.Errorf("call refused %s", a.Refused)
				return
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
		return
	}
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
