package session

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/relay/baseline"
)

// BenchmarkFanoutRate is BenchmarkFanout with the host sending on a fixed
// schedule (open loop) instead of a window: the relay rows of the
// performance targets, 1 view at 10,000 messages/s, 100 at 1,000 and
// 1,000 at 50, each against the bare forwarder in the same run. One op
// is one host message; p50-ns and p99-ns are host send to view receive.
// Every goroutine of the server side (the broker's, or the forwarder's)
// carries the pprof label side=server, so a CPU profile can be cut to it:
//
//	go test ./broker/session -run '^$' -bench 'FanoutRate' -benchtime 2000x -cpuprofile cpu.out
//	go tool pprof -top -tagfocus side=server session.test cpu.out
func BenchmarkFanoutRate(b *testing.B) {
	for _, shape := range []struct{ views, rate int }{{1, 10000}, {100, 1000}, {1000, 50}} {
		for _, impl := range []struct {
			name  string
			setup func(*testing.B, int) (*fanout, func())
		}{{"airlock", labelledAirlockFanout}, {"bare", labelledBareFanout}} {
			b.Run(fmt.Sprintf("views=%d/rate=%d/%s", shape.views, shape.rate, impl.name), func(b *testing.B) {
				f, stop := impl.setup(b, shape.views)
				f.runRate(b, shape.rate)
				f.close()
				stop()
			})
		}
	}
}

// serverLabels marks the goroutines of the side under test.
var serverLabels = pprof.Labels("side", "server")

// labelledAirlockFanout is airlockFanout with the broker's goroutines
// labelled side=server: only the server is started under the labels
// (goroutines inherit them), not the clients.
func labelledAirlockFanout(b *testing.B, n int) (*fanout, func()) {
	var br *testBroker
	pprof.Do(context.Background(), serverLabels, func(context.Context) { br = startBroker(b, testLocal(), nil) })
	return connectFanout(b, br, n), br.stop
}

// labelledBareFanout is bareFanout with the forwarder's goroutines
// labelled side=server.
func labelledBareFanout(b *testing.B, n int) (*fanout, func()) {
	var fw *baseline.Forwarder
	var err error
	pprof.Do(context.Background(), serverLabels, func(context.Context) { fw, err = baseline.Start(baseline.Options{}) })
	if err != nil {
		b.Fatal(err)
	}
	return connectBareFanout(b, fw, n), func() {}
}

// rateWindow is how far the host may run ahead of its slowest view, as
// in `airlock load relay --rate` (half the view queue): a machine that
// cannot keep up holds the host back rather than dropping views.
const rateWindow = 128

// runRate sends b.N ordered messages, the k-th due k/rate after the
// start (what falls behind the schedule is sent at once), and waits until
// every view has received every one.
func (f *fanout) runRate(b *testing.B, rate int) {
	ctx := context.Background()
	sent := make([]time.Time, b.N+1)
	var mu sync.Mutex // guards sent against the views' reads
	lat := make([][]time.Duration, len(f.views))
	got := make([]atomic.Int64, len(f.views)) // each view's last hostSequence
	notify := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for i, v := range f.views {
		lat[i] = make([]time.Duration, 0, b.N)
		wg.Go(func() {
			for n := 0; n < b.N; {
				m := nextState(b, v)
				if m == nil {
					return
				}
				now := time.Now()
				mu.Lock()
				at := sent[m.HostSequence]
				mu.Unlock()
				lat[i] = append(lat[i], now.Sub(at))
				n++
				got[i].Store(m.HostSequence)
				select {
				case notify <- struct{}{}:
				default:
				}
			}
		})
	}
	frames := make([][]byte, b.N+1)
	for i := 1; i <= b.N; i++ {
		frames[i] = f.host.Envelope("focusNode", map[string]any{"nodeId": "layer-7", "pad": "0123456789abcdef0123456789abcdef"}, int64(i))
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	b.ResetTimer()
	start := time.Now()
	for i := 1; i <= b.N; i++ {
		if wait := time.Until(start.Add(time.Duration(int64(i-1) * int64(time.Second) / int64(rate)))); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		for j := range got { // at most rateWindow ahead of the slowest view
			for got[j].Load() < int64(i-rateWindow) {
				<-notify
			}
		}
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if err := f.host.SendRaw(ctx, frames[i]); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	reportLatency(b, lat)
}
