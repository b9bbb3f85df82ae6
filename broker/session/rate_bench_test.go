package session

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/relay/baseline"
	"github.com/airlock/airlock/broker/relay/contract"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/metrics"
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
// labelled side=server.
func labelledAirlockFanout(b *testing.B, n int) (*fanout, func()) {
	var br *testBroker
	pprof.Do(context.Background(), serverLabels, func(context.Context) { br = startLabelledBroker(b) })
	return connectFanout(b, br, n), br.stop
}

// startLabelledBroker is startBroker with testLocal, its server started
// from the calling goroutine (which carries the labels).
func startLabelledBroker(t testing.TB) *testBroker {
	reg := metrics.New()
	svc := New(Options{Local: testLocal(), Token: httpx.NewToken(testToken), Metrics: reg})
	mux := http.NewServeMux()
	svc.Mount(mux)
	var port int
	h := httpx.HostGuard(func() int { return port }, func(string, contract.Code) {}, mux)
	srv := httptest.NewUnstartedServer(h)
	srv.Start()
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ = strconv.Atoi(p)
	br := &testBroker{Service: svc, URL: srv.URL, Origin: srv.URL, Metrics: reg, srv: srv}
	t.Cleanup(br.stop)
	return br
}

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

// labelledBareFanout is bareFanout with the forwarder's goroutines
// labelled side=server.
func labelledBareFanout(b *testing.B, n int) (*fanout, func()) {
	var fw *baseline.Forwarder
	var err error
	pprof.Do(context.Background(), serverLabels, func(context.Context) { fw, err = baseline.Start() })
	if err != nil {
		b.Fatal(err)
	}
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
	return f, func() {}
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
				m, err := v.Receive(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if m.HostSequence == 0 {
					continue
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
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
}
