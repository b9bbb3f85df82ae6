package session

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/relay/baseline"
	"github.com/airlock/airlock/executors/testkit"
)

// Benchmarks of host-to-views fan-out and idle memory, each measured
// against a bare coder/websocket forwarder in the same run. They report,
// they never pass or fail on time. Run:
//
//	go test ./broker/session -run '^$' -bench . -benchtime 200x -benchmem

// fanout is one connected topology: a host and its views.
type fanout struct {
	host  *localclient.Conn
	views []*localclient.Conn
}

func (f *fanout) close() {
	_ = f.host.Close()
	for _, v := range f.views {
		_ = v.Close()
	}
}

func airlockFanout(b *testing.B, n int) (*fanout, func()) {
	br := startBroker(b, testLocal(), nil)
	return connectFanout(b, br, n), br.stop
}

// connectFanout connects a host and n views to one session of br.
func connectFanout(b *testing.B, br *testBroker, n int) *fanout {
	ctx := context.Background()
	m, ck := flow(b, br)
	host, err := localclient.DialHost(ctx, br.URL, m)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := host.Hello(ctx); err != nil {
		b.Fatal(err)
	}
	f := &fanout{host: host}
	for range n {
		v, err := localclient.DialView(ctx, br.URL, br.Origin, m.WorkspaceSessionID, ck)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Hello(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := v.Receive(ctx); err != nil { // connectionState
			b.Fatal(err)
		}
		if _, err := host.Receive(ctx); err != nil { // viewState
			b.Fatal(err)
		}
		f.views = append(f.views, v)
	}
	return f
}

// bareFanout connects a host and n views to a bare coder/websocket
// forwarder (broker/relay/baseline), all in one room.
func bareFanout(b *testing.B, n int) (*fanout, func()) {
	fw, err := baseline.Start(baseline.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return connectBareFanout(b, fw, n), func() {}
}

// connectBareFanout connects a host and n views to fw, closed at cleanup.
func connectBareFanout(b *testing.B, fw *baseline.Forwarder, n int) *fanout {
	b.Cleanup(func() { _ = fw.Close() })
	ctx := context.Background()
	host, err := localclient.Dial(ctx, fw.URL(), localclient.DialOptions{Origin: baseline.HostOrigin, SessionID: "bare"})
	if err != nil {
		b.Fatal(err)
	}
	f := &fanout{host: host}
	for range n {
		v, err := localclient.Dial(ctx, fw.URL(), localclient.DialOptions{})
		if err != nil {
			b.Fatal(err)
		}
		f.views = append(f.views, v)
	}
	testkit.Eventually(b, "every view registered", func() bool { return fw.Views() == n })
	return f
}

// window is how many host messages may be in flight before the host waits
// for every view: well under the outbound queue, so the benchmark measures
// relaying, not slow-consumer drops.
const window = 32

// run sends b.N ordered messages from the host and waits until every view
// has received every one; it reports deliveries per second and the p50
// and p99 of send-to-receive latency.
func (f *fanout) run(b *testing.B) {
	ctx := context.Background()
	sent := make([]time.Time, b.N+1)
	lat := make([][]time.Duration, len(f.views))
	var wg sync.WaitGroup
	progress := make([]chan int64, len(f.views))
	for i, v := range f.views {
		progress[i] = make(chan int64, window)
		lat[i] = make([]time.Duration, 0, b.N)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got := 0; got < b.N; {
				m := nextState(b, v)
				if m == nil {
					return
				}
				lat[i] = append(lat[i], time.Since(sent[m.HostSequence]))
				got++
				if got%window == 0 || got == b.N {
					progress[i] <- m.HostSequence
				}
			}
		}()
	}
	payload := map[string]any{"nodeId": "layer-7", "pad": "0123456789abcdef0123456789abcdef"}
	b.ResetTimer()
	start := time.Now()
	for i := 1; i <= b.N; i++ {
		sent[i] = time.Now()
		if err := f.host.Send(ctx, "focusNode", payload, int64(i)); err != nil {
			b.Fatal(err)
		}
		if i%window == 0 || i == b.N {
			for _, p := range progress {
				<-p
			}
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := reportLatency(b, lat); n > 0 {
		b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
	}
}

// nextState is the view's next ordered host message, skipping the
// broker's own; nil (and the benchmark failed) when the view closed.
func nextState(b *testing.B, v *localclient.Conn) *localclient.Message {
	for {
		m, err := v.Receive(context.Background())
		if err != nil {
			b.Error(err)
			return nil
		}
		if m.HostSequence != 0 {
			return m
		}
	}
}

// reportLatency reports the p50 and p99 of every view's latencies and
// returns how many there were.
func reportLatency(b *testing.B, lat [][]time.Duration) int {
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
	}
	return len(all)
}

func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		for _, impl := range []struct {
			name  string
			setup func(*testing.B, int) (*fanout, func())
		}{{"airlock", airlockFanout}, {"bare", bareFanout}} {
			b.Run(fmt.Sprintf("views=%d/%s", n, impl.name), func(b *testing.B) {
				f, stop := impl.setup(b, n)
				f.run(b)
				f.close()
				stop()
			})
		}
	}
}

// BenchmarkIdleViewMemory reports the heap and stack a connected idle
// view costs (broker and client side together, both in this process).
func BenchmarkIdleViewMemory(b *testing.B) {
	const n = 500
	for _, impl := range []struct {
		name  string
		setup func(*testing.B, int) (*fanout, func())
	}{{"airlock", airlockFanout}, {"bare", bareFanout}} {
		b.Run(impl.name, func(b *testing.B) {
			before := inUse()
			f, stop := impl.setup(b, n)
			after := inUse()
			b.ResetTimer()
			for range b.N {
			}
			b.StopTimer()
			b.ReportMetric(float64(after-before)/n, "bytes/view")
			f.close()
			stop()
		})
	}
}

func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
