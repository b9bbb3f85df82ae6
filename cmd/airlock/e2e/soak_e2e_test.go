package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/wire"
)

// TestSoak puts every kind of load on one broker at once, for a bounded
// time: sessions whose host streams state to its views, tool calls to a
// local plugin and through a paired environment, and slow clients that
// open connections and send a request head or body a byte at a time. The
// broker's resident memory, goroutines and open file descriptors are
// sampled before, during and after; once the load stops and its clients
// are gone, goroutines and descriptors return to their baseline, and
// memory stays under a fixed ceiling above it. AIRLOCK_SOAK_SECONDS sets the load's length
// (default 30; CI keeps the default).
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: not in -short")
	}
	length := 30 * time.Second
	if s, err := strconv.Atoi(os.Getenv("AIRLOCK_SOAK_SECONDS")); err == nil && s > 0 {
		length = time.Duration(s) * time.Second
	}
	local := chanPlugins(t, map[string]wire.Bounds{"lx": {TimeoutMs: 30000, MemoryMiB: 64, MaxOutputBytes: 1 << 16,
		AllowedHosts: []string{}, Roots: []string{}}})
	w := newChanWorld(t, "AIRLOCK_PLUGINS="+local)
	lx := wire.Bounds{TimeoutMs: 30000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}
	mx := lx
	w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"mx": mx}))
	w.waitServing("lx", lx)
	w.waitServing("mx", mx)

	base := sampleProc(t, w.broker)
	t.Logf("baseline: %s", base)

	ctx, stop := context.WithTimeout(context.Background(), length)
	defer stop()
	var wg sync.WaitGroup
	var calls, relayed, slow atomic.Int64
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}

	// Sessions: a host streaming ordered state to its views, which read it.
	const sessions, views = 4, 3
	socks := soakSessions(t, w.broker, sessions, views)
	for _, s := range socks {
		wg.Add(1 + len(s.views))
		go func() {
			defer wg.Done()
			for seq := int64(1); ctx.Err() == nil; seq++ {
				if err := s.host.Send(context.Background(), "focusNode", map[string]any{"nodeId": "n", "seq": seq}, seq); err != nil {
					report(fmt.Errorf("host send: %w", err))
					return
				}
				time.Sleep(20 * time.Millisecond) // pacing, not synchronisation
			}
		}()
		for _, v := range s.views {
			go func() {
				defer wg.Done()
				for {
					rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					_, err := v.Receive(rctx)
					cancel()
					if err != nil {
						if ctx.Err() == nil {
							report(fmt.Errorf("view receive: %w", err))
						}
						return
					}
					relayed.Add(1)
				}
			}()
		}
	}

	// Callers: local and machine calls, back to back.
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				id, b := "lx", lx
				if (g+i)%2 == 1 {
					id, b = "mx", mx
				}
				a, err := w.tryCall(fmt.Sprintf("s%d-%d", g, i), id, b, "echo", fmt.Sprintf(`{"i":%d}`, i))
				if err != nil || !a.OK {
					report(fmt.Errorf("call %s: %+v %v", id, a, err))
					return
				}
				calls.Add(1)
			}
		}()
	}

	// Slow clients: each opens a connection, sends part of a request and
	// then a byte now and then, and holds on until the broker or the end
	// of the load closes it.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var conns sync.WaitGroup
		defer conns.Wait()
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			conns.Add(1)
			go func() {
				defer conns.Done()
				slowClient(ctx, w.broker.Addr, i%2 == 0)
				slow.Add(1)
			}()
			time.Sleep(50 * time.Millisecond) // pacing
		}
	}()

	peak := base
	for ctx.Err() == nil {
		time.Sleep(time.Second) // sampling period
		peak = peak.max(sampleProc(t, w.broker))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, s := range socks {
		s.close()
	}
	t.Logf("load: %v, %d calls, %d relayed messages, %d slow clients; peak: %s", length, calls.Load(), relayed.Load(), slow.Load(), peak)
	if calls.Load() == 0 || relayed.Load() == 0 {
		t.Fatalf("the load did nothing: %d calls, %d messages", calls.Load(), relayed.Load())
	}

	// After: every session socket and slow client is gone. Goroutines and
	// descriptors come back to the baseline (a small slack for keep-alive
	// connections the test's own HTTP client still holds). Resident memory
	// is held to a fixed ceiling above the baseline during and after the
	// load, however long it ran, and does not grow once the load stops; it
	// does not drop back at once, since Go keeps freed heap for reuse and
	// returns it to the system lazily (and under -race every page has
	// shadow memory too).
	const slack, memCeiling = 8, 256 << 20
	http.DefaultClient.CloseIdleConnections()
	var after procSample
	deadline := time.Now().Add(90 * time.Second)
	for {
		after = sampleProc(t, w.broker)
		if after.goroutines <= base.goroutines+slack && after.fds <= base.fds+slack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the load: %s, baseline %s", after, base)
		}
		time.Sleep(100 * time.Millisecond) // polling observable state
	}
	t.Logf("after: %s", after)
	if peak.rss > base.rss+memCeiling || after.rss > peak.rss+memCeiling/8 {
		t.Errorf("resident memory: baseline %d MiB, peak %d MiB, after %d MiB; want at most %d MiB over the baseline, and no growth after the load",
			base.rss>>20, peak.rss>>20, after.rss>>20, memCeiling>>20)
	}
	if a := w.call("after", "lx", lx, "echo", `{}`); !a.OK {
		t.Errorf("a call after the soak: %+v", a)
	}
}

// procSample is one reading of the broker process.
type procSample struct {
	rss        int64 // bytes
	goroutines int
	fds        int
}

func (s procSample) String() string {
	return fmt.Sprintf("RSS %d MiB, %d goroutines, %d fds", s.rss>>20, s.goroutines, s.fds)
}

func (s procSample) max(o procSample) procSample {
	return procSample{rss: max(s.rss, o.rss), goroutines: max(s.goroutines, o.goroutines), fds: max(s.fds, o.fds)}
}

// sampleProc reads RSS and descriptors from /proc and goroutines from the
// broker's own metrics.
func sampleProc(t *testing.T, p *proc) procSample {
	t.Helper()
	pid := p.cmd.Process.Pid
	var s procSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, line := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			s.rss = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	must(t, err)
	s.fds = len(fds)
	s.goroutines = int(metricValue(scrape(t, p), "go_goroutines"))
	return s
}

// soakSession is one session's host and views, owned by the soak.
type soakSession struct {
	host  *localclient.Conn
	views []*localclient.Conn
}

func (s soakSession) close() {
	s.host.CloseNow()
	for _, v := range s.views {
		v.CloseNow()
	}
}

func soakSessions(t *testing.T, p *proc, n, views int) []soakSession {
	t.Helper()
	c := &localclient.Client{Base: p.URL(), Token: testToken}
	var out []soakSession
	for range n {
		m, err := c.Mint(tctx(t), localclient.MintOptions{LaunchOrigin: p.URL()})
		must(t, err)
		p.AddSecret(m.ViewCredential)
		p.AddSecret(m.HostCookieKey)
		ck, _, err := c.Bootstrap(tctx(t), m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential)
		must(t, err)
		p.AddSecret(ck.Cookie.Value)
		p.AddSecret(ck.Key)
		host, err := localclient.DialHost(tctx(t), p.URL(), m)
		must(t, err)
		_, err = host.Hello(tctx(t))
		must(t, err)
		s := soakSession{host: host}
		t.Cleanup(s.close)
		for range views {
			v, err := localclient.DialView(tctx(t), p.URL(), m.LaunchOrigin, m.WorkspaceSessionID, ck)
			must(t, err)
			_, err = v.Hello(tctx(t))
			must(t, err)
			s.views = append(s.views, v)
		}
		// The host drains what the broker tells it (viewState) so its own
		// queue never fills.
		go func() {
			for {
				if _, err := host.Receive(context.Background()); err != nil {
					return
				}
			}
		}()
		out = append(out, s)
	}
	return out
}

// slowClient opens a connection to addr and sends a request a byte at a
// time: the head when head is set, else a complete head and then a body
// that never finishes. It returns when the broker closes the connection
// or ctx ends.
func slowClient(ctx context.Context, addr string, head bool) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return // refused past the connection cap: a clean refusal
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	req := "POST /v1/calls HTTP/1.1\r\nHost: " + addr + "\r\nX-Tensorviz-Token: " + testToken + "\r\nContent-Length: 100000\r\n\r\n"
	if !head {
		if _, err := conn.Write([]byte(req)); err != nil {
			return
		}
		req = `{"v":1,"callId":"slow","tool":"echo","descriptorId":"lx","args":{"pad":"` + string(bytes.Repeat([]byte("x"), 1000))
	}
	for i := 0; ctx.Err() == nil; i = (i + 1) % len(req) {
		if _, err := conn.Write([]byte{req[i]}); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond) // the attack's pace
	}
}
