package session

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/relay"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a Clock that moves only when a test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	ch      chan time.Time
	f       func()
	stopped bool
	fired   bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) TimerAt(at time.Time) Timer {
	return c.add(func(time.Time) time.Time { return at }, nil)
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	return c.add(func(now time.Time) time.Time { return now.Add(d) }, f)
}

// add arms a timer at the time deadline gives for the clock's now, and
// fires it at once if that has passed.
func (c *fakeClock) add(deadline func(now time.Time) time.Time, f func()) *fakeTimer {
	c.mu.Lock()
	t := &fakeTimer{c: c, at: deadline(c.now), ch: make(chan time.Time, 1), f: f}
	c.timers = append(c.timers, t)
	due := !t.at.After(c.now)
	c.mu.Unlock()
	if due {
		c.Advance(0)
	}
	return t
}

// armed is how many timers wait to fire.
func (c *fakeClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time on and fires every timer that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped || t.fired:
		case !t.at.After(c.now):
			t.fired = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	now := c.now
	c.mu.Unlock()
	for _, t := range due {
		if t.f != nil {
			go t.f()
		} else {
			t.ch <- now
		}
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

// testLocal is the default local.* configuration.
func testLocal() config.Local {
	return config.Local{TombstoneRetentionSeconds: 3600, SourceProposals: true, HandshakeTimeoutMs: 5000,
		MaxFrameBytes: 16 << 20, OutboundQueue: 256, OutboundQueueBytes: 32 << 20, MaxRequestsPerView: 64,
		MaxSessions: 10000, MaxViewsPerSession: 1024, MaxTombstones: 10000, ViewKey: true}
}

const testToken = "test-launch-token-0123456789abcdef"

// testBroker is a Service behind a real loopback listener with the Host
// guard, the way broker.Server mounts it.
type testBroker struct {
	*Service
	URL     string
	Origin  string // the broker's own origin
	Metrics *metrics.Registry
	srv     *httptest.Server
}

func startBroker(t testing.TB, local config.Local, clock Clock) *testBroker {
	t.Helper()
	return startBrokerWith(t, Options{Local: local, Clock: clock})
}

// startBrokerWith is startBroker with more options; the token and the
// metrics registry are the test's.
func startBrokerWith(t testing.TB, o Options) *testBroker {
	t.Helper()
	reg := metrics.New()
	o.Token, o.Metrics = httpx.NewToken(testToken), reg
	svc := New(o)
	mux := http.NewServeMux()
	svc.Mount(mux)
	var port int
	h := httpx.HostGuard(func() int { return port }, func(string, contract.Code) {}, mux)
	srv := httptest.NewUnstartedServer(h)
	srv.Start()
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ = strconv.Atoi(p)
	b := &testBroker{Service: svc, URL: srv.URL, Origin: srv.URL, Metrics: reg, srv: srv}
	t.Cleanup(b.stop)
	return b
}

func (b *testBroker) stop() {
	b.Drain()
	b.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = b.Service.Close(ctx)
}

func newRegistry() *metrics.Registry { return metrics.New() }

func relayOptionsForTest() relay.Options { return relay.Options{MaxViews: 1024} }
