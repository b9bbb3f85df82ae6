package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	relaybaseline "github.com/airlock/airlock/broker/relay/baseline"
	"github.com/airlock/airlock/metrics"
)

// IdleOptions are the options of the idle workload: connect views, let
// them sit, and read what they cost the process that holds them.
type IdleOptions struct {
	// Sessions is how many sessions are minted, each with one host.
	Sessions int
	// Views is how many views connect to each session.
	Views int
	// Settle is how long the views sit idle, all connected, before the
	// memory is read.
	Settle time.Duration
	// Dialers is how many views connect at once; 0 means 16.
	Dialers int
	// BrokerPID, when not 0, is read from /proc/PID/status (VmRSS)
	// instead of the broker's /metrics.
	BrokerPID int
	// Floor starts the bare forwarder in a process of its own; nil
	// measures the broker alone.
	Floor func(ctx context.Context, maxMessage int64) (*FloorProcess, error)
	// Progress, when not nil, gets a line per phase.
	Progress io.Writer
}

// FloorProcess is a floor running in a process of its own (the bare
// forwarder, the HTTP floor, the rtt echo): its URL (and, for the HTTP
// floor beside a broker reached over its Unix socket, the socket to dial
// for it, as in v1client.Client), its pid (whose VmRSS `load idle`
// reads), the secret its requests must carry (secret.go), for the
// forwarder how many views it has registered, and how to stop it.
type FloorProcess struct {
	URL    string
	Socket string
	PID    int
	Secret string
	Views  func() (int, error)
	Stop   func() error
}

// errCapped: the broker closed views to stay under its connection cap.
var errCapped = errors.New("load: the broker is at its connection cap (http.max_connections)")

var errIdleTopology = errors.New("load: sessions and views must be at least 1, --settle not negative, --dialers not negative")

// Check refuses options that cannot make a run.
func (o IdleOptions) Check() error {
	if o.Sessions < 1 || o.Views < 1 || o.Settle < 0 || o.Dialers < 0 || o.BrokerPID < 0 {
		return errIdleTopology
	}
	return nil
}

// IdleReport is the report of the idle workload; its JSON is what
// `airlock load idle --json` prints.
type IdleReport struct {
	Command       string       `json:"command"`
	Broker        string       `json:"broker"`
	Sessions      int          `json:"sessions"`
	Views         int          `json:"viewsPerSession"`
	SettleSeconds float64      `json:"settleSeconds"`
	Airlock       IdleFigures  `json:"airlock"`
	Baseline      *IdleFigures `json:"baseline,omitempty"`
	Ratio         float64      `json:"ratio,omitempty"` // Airlock ÷ baseline, RSS per view
	Interrupted   bool         `json:"interrupted,omitempty"`
}

// IdleFigures are one process's memory before and after the views.
type IdleFigures struct {
	Label string `json:"label"`
	// Source is where the figures were read: "/metrics" or
	// "/proc/PID/status".
	Source       string  `json:"source"`
	Views        int     `json:"views"`
	RSSBefore    int64   `json:"rssBeforeBytes"`
	RSSAfter     int64   `json:"rssAfterBytes"`
	RSSPerView   float64 `json:"rssPerViewBytes"`
	Goroutines   float64 `json:"goroutinesPerView,omitempty"`
	HeapPerView  float64 `json:"heapInusePerViewBytes,omitempty"`
	StackPerView float64 `json:"stackInusePerViewBytes,omitempty"`
}

// memSample is one reading of a process's memory; the Go runtime's
// figures are there only when read from /metrics.
type memSample struct {
	rss, goroutines, heap, stack int64
	// capped counts the connections the broker evicted or refused to
	// stay under http.max_connections (its connections_evicted_total,
	// every phase, and connections_refused_total).
	capped int64
}

// Idle connects o.Sessions × o.Views idle views to the broker (and, in
// a second turn, to the bare forwarder in its own process), waits until
// every one is connected and the broker has nothing left to send, lets
// them sit for o.Settle, and reports each process's RSS growth per view.
// The two turns run one after the other, never together, so the client
// sockets of only one side are open at a time.
func Idle(ctx context.Context, client *localclient.Client, origin string, o IdleOptions) (*IdleReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Dialers == 0 {
		o.Dialers = 16
	}
	rep := &IdleReport{Command: "idle", Broker: client.Base, Sessions: o.Sessions, Views: o.Views, SettleSeconds: o.Settle.Seconds()}
	read := func() (memSample, error) { return readMetrics(ctx, client.Base) }
	source := "/metrics"
	if o.BrokerPID != 0 {
		read = func() (memSample, error) { return readProcRSS(o.BrokerPID) }
		source = fmt.Sprintf("/proc/%d/status", o.BrokerPID)
	}
	ms := &mintedSessions{client: client}
	defer ms.end()
	air, err := measureIdle(ctx, "airlock", o, read, func(ctx context.Context, g *idleGroup) error {
		return connectIdleAirlock(ctx, ms, origin, o, g)
	})
	if err != nil {
		return nil, err
	}
	air.Label, air.Source = "airlock "+client.Base, source
	rep.Airlock = air
	if o.Floor != nil && ctx.Err() == nil {
		fp, err := o.Floor(ctx, MaxMessage(0)) // idle hosts send nothing
		if err != nil {
			return nil, fmt.Errorf("load: floor: %w", err)
		}
		readFloor := func() (memSample, error) { return readProcRSS(fp.PID) }
		b, err := measureIdle(ctx, "baseline", o, readFloor, func(ctx context.Context, g *idleGroup) error { return connectIdleBare(ctx, fp, o, g) })
		stopErr := fp.Stop()
		if err != nil {
			return nil, err
		}
		if stopErr != nil {
			return nil, fmt.Errorf("load: floor: %w", stopErr)
		}
		b.Label, b.Source = fmt.Sprintf("bare coder/websocket forwarder, process %d", fp.PID), fmt.Sprintf("/proc/%d/status", fp.PID)
		rep.Baseline = &b
		if b.RSSPerView > 0 {
			rep.Ratio = air.RSSPerView / b.RSSPerView
		}
	}
	rep.Interrupted = ctx.Err() != nil
	return rep, nil
}

// measureIdle reads the process's memory, connects the views, waits
// o.Settle, reads it again and closes the views.
func measureIdle(ctx context.Context, name string, o IdleOptions, read func() (memSample, error), connect func(context.Context, *idleGroup) error) (IdleFigures, error) {
	before, err := read()
	if err != nil {
		return IdleFigures{}, err
	}
	g := &idleGroup{}
	defer g.close()
	progressf(o.Progress, "%s: connecting %d views over %d sessions", name, o.Sessions*o.Views, o.Sessions)
	if err := connect(ctx, g); err != nil {
		return IdleFigures{}, capped(ctx, err, before, read, g, o)
	}
	if err := g.idle(ctx); err != nil {
		return IdleFigures{}, err
	}
	progressf(o.Progress, "%s: %d views connected and idle; settling for %v", name, g.views(), o.Settle)
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
	}
	after, err := read()
	if err != nil {
		return IdleFigures{}, err
	}
	n := g.views()
	if lost := g.lost(); lost > 0 {
		return IdleFigures{}, fmt.Errorf("load: %d of %d views were closed while idle (is http.max_connections or local.max_views_per_session below the views?)", lost, n)
	}
	per := func(a, b int64) float64 { return float64(a-b) / float64(n) }
	f := IdleFigures{Views: n, RSSBefore: before.rss, RSSAfter: after.rss, RSSPerView: per(after.rss, before.rss)}
	if after.goroutines > 0 {
		f.Goroutines = per(after.goroutines, before.goroutines)
		f.HeapPerView = per(after.heap, before.heap)
		f.StackPerView = per(after.stack, before.stack)
	}
	return f, nil
}

// capped names what stopped a run's views from connecting when it was
// the broker's connection cap: its counters of connections evicted and
// refused (memSample.capped) moved since before. The views are closed
// first, so that the broker has room to answer /metrics; it frees their
// slots as it sees them go, so the read is tried a few times.
func capped(ctx context.Context, err error, before memSample, read func() (memSample, error), g *idleGroup, o IdleOptions) error {
	connected := g.views()
	g.close()
	for range cappedReads {
		now, rerr := read()
		if rerr == nil {
			if now.capped > before.capped {
				return fmt.Errorf("%w: it closed or refused %d connections with %d views connected; start it with a cap above %d, this run's views and hosts "+
					"(AIRLOCK_HTTP_MAX_CONNECTIONS=N, or http.max_connections in its config file)", errCapped, now.capped-before.capped, connected, o.Sessions*(o.Views+1))
			}
			return err
		}
		select {
		case <-time.After(cappedPause):
		case <-ctx.Done():
			return err
		}
	}
	return err
}

// cappedReads and cappedPause bound capped's tries of /metrics.
const (
	cappedReads = 20
	cappedPause = 100 * time.Millisecond
)

func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// idleGroup is the connected sockets of one turn: the hosts, which are
// read so the broker's notices to them never pile up, and the views,
// which are read too (a view receives connectionState after hello).
type idleGroup struct {
	mu    sync.Mutex
	hosts []*idleHost
	conns []*localclient.Conn
}

// idleHost is a host and the viewState notices it has still to receive.
type idleHost struct {
	conn  *localclient.Conn
	mu    sync.Mutex
	want  int // views joined, each announced to the host once
	got   int
	moved chan struct{} // a notice arrived
}

func (g *idleGroup) add(c *localclient.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conns = append(g.conns, c)
}

func (g *idleGroup) views() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns) - len(g.hosts)
}

// lost counts sockets that closed before the group did.
func (g *idleGroup) lost() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.conns {
		select {
		case <-c.Done():
			n++
		default:
		}
	}
	return n
}

// addHost adds a host and reads it until it closes; viewStates expects
// the number of viewState notices the host should receive (0 for the
// bare forwarder, which sends none).
func (g *idleGroup) addHost(c *localclient.Conn, viewStates int) *idleHost {
	h := &idleHost{conn: c, want: viewStates, moved: make(chan struct{}, 1)}
	g.mu.Lock()
	g.hosts = append(g.hosts, h)
	g.conns = append(g.conns, c)
	g.mu.Unlock()
	go func() {
		for {
			m, err := c.Receive(context.Background())
			if err != nil {
				return
			}
			if m.Type == "viewState" {
				h.mu.Lock()
				h.got++
				h.mu.Unlock()
				select {
				case h.moved <- struct{}{}:
				default:
				}
			}
		}
	}()
	return h
}

// idle waits until every host has heard of all its views: the broker's
// queues are then empty and nothing more is on its way.
func (g *idleGroup) idle(ctx context.Context) error {
	for _, h := range g.hosts {
		for {
			h.mu.Lock()
			done := h.got >= h.want
			h.mu.Unlock()
			if done {
				break
			}
			select {
			case <-h.moved:
			case <-h.conn.Done():
				return errors.New("load: a host was closed before its views were announced")
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// close closes every socket, views first, and waits for them.
func (g *idleGroup) close() {
	g.mu.Lock()
	conns := g.conns
	g.conns, g.hosts = nil, nil
	g.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, c := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_ = c.Close()
		})
	}
	wg.Wait()
}

// mintedSessions are the sessions a run minted, through client; end
// ends them all when the run ends (DELETE /local/sessions/{id}), so a
// load run leaves no session behind holding local.max_sessions, even one
// cut short by Ctrl-C or an error.
type mintedSessions struct {
	client *localclient.Client
	ids    []string
}

// endBound bounds ending a run's sessions: a broker that is gone must
// not hold the command's exit.
const endBound = 10 * time.Second

func (m *mintedSessions) end() {
	ctx, cancel := context.WithTimeout(context.Background(), endBound)
	defer cancel()
	for _, id := range m.ids {
		if ctx.Err() != nil {
			return
		}
		_ = m.client.End(ctx, id) // gone already, or the broker is: nothing left to end
	}
}

// idleInbox is each idle view's receive buffer: it gets connected (read
// by Hello) and connectionState, and nothing more while idle.
const idleInbox = 8

// connectIdleAirlock mints the sessions, connects a host to each and then
// its views, o.Dialers at a time, each with hello answered.
func connectIdleAirlock(ctx context.Context, ms *mintedSessions, origin string, o IdleOptions, g *idleGroup) error {
	client := ms.client
	for range o.Sessions {
		minted, ck, host, err := openSession(ctx, ms, origin, 0)
		if err != nil {
			return err
		}
		g.addHost(host, o.Views)
		err = dialMany(ctx, o.Views, o.Dialers, func(ctx context.Context) error {
			v, err := localclient.Dial(ctx, client.Base, localclient.DialOptions{Origin: origin, SessionID: minted.WorkspaceSessionID,
				Cookies: []*http.Cookie{ck.Cookie}, ViewKey: ck.Key, Inbox: idleInbox})
			if err != nil {
				return err
			}
			g.add(v)
			if _, err := v.Hello(ctx); err != nil {
				return err
			}
			go drain(v)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// openSession mints a session (ttl 0: the broker's default), bootstraps
// its view cookie and key and connects its host, hello answered.
func openSession(ctx context.Context, ms *mintedSessions, origin string, ttl int64) (*localclient.Minted, *localclient.ViewPass, *localclient.Conn, error) {
	client := ms.client
	minted, err := client.Mint(ctx, localclient.MintOptions{LaunchOrigin: origin, TTLSeconds: ttl})
	if err != nil {
		return nil, nil, nil, err
	}
	ms.ids = append(ms.ids, minted.WorkspaceSessionID)
	ck, _, err := client.Bootstrap(ctx, origin, minted.WorkspaceSessionID, minted.ViewCredential)
	if err != nil {
		return nil, nil, nil, err
	}
	host, err := localclient.DialHost(ctx, client.Base, minted)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := host.Hello(ctx); err != nil {
		_ = host.Close()
		return nil, nil, nil, err
	}
	return minted, ck, host, nil
}

// connectIdleBare connects the same topology to the bare forwarder, one
// room (path) per session. It has no hello and no notices: a view is
// connected when its upgrade is answered.
func connectIdleBare(ctx context.Context, fp *FloorProcess, o IdleOptions, g *idleGroup) error {
	for i := range o.Sessions {
		room := fmt.Sprintf("%s/s%d", fp.URL, i)
		host, err := localclient.Dial(ctx, room, localclient.DialOptions{Origin: relaybaseline.HostOrigin, Header: SecretHeader(fp.Secret)})
		if err != nil {
			return err
		}
		g.addHost(host, 0)
		err = dialMany(ctx, o.Views, o.Dialers, func(ctx context.Context) error {
			v, err := localclient.Dial(ctx, room, localclient.DialOptions{Inbox: idleInbox, Header: SecretHeader(fp.Secret)})
			if err != nil {
				return err
			}
			g.add(v)
			go drain(v)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// drain reads a view's messages until it closes.
func drain(c *localclient.Conn) {
	for {
		if _, err := c.Receive(context.Background()); err != nil {
			return
		}
	}
}

// dialMany runs dial n times, at most width at once; the first error
// stops it.
func dialMany(ctx context.Context, n, width int, dial func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := dial(ctx); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// maxMetricsBody bounds the /metrics body read.
const maxMetricsBody = 8 << 20

// readMetrics reads the broker's RSS and Go runtime figures from its
// /metrics.
func readMetrics(ctx context.Context, base string) (memSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/metrics", nil)
	if err != nil {
		return memSample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return memSample{}, fmt.Errorf("load: /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return memSample{}, fmt.Errorf("load: /metrics answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return memSample{}, fmt.Errorf("load: /metrics: %w", err)
	}
	return parseMemMetrics(body)
}

// parseMemMetrics picks the memory figures out of a Prometheus text
// exposition; process_resident_memory_bytes is required.
func parseMemMetrics(body []byte) (memSample, error) {
	var s memSample
	fields := map[string]*int64{
		"process_resident_memory_bytes": &s.rss,
		"go_goroutines":                 &s.goroutines,
		"go_memstats_heap_inuse_bytes":  &s.heap,
		"go_memstats_stack_inuse_bytes": &s.stack,
	}
	// Summed over their series: every eviction phase counts.
	summed := map[string]*int64{
		metrics.Namespace + "_connections_evicted_total": &s.capped,
		metrics.Namespace + "_connections_refused_total": &s.capped,
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		series, value, ok := strings.Cut(sc.Text(), " ")
		name, _, _ := strings.Cut(series, "{")
		p, sum := fields[series], false
		if p == nil {
			p, sum = summed[name], true
		}
		if !ok || p == nil {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return memSample{}, fmt.Errorf("load: /metrics: %s: %w", name, err)
		}
		if sum {
			*p += int64(v)
		} else {
			*p = int64(v)
		}
	}
	if s.rss == 0 {
		return memSample{}, errors.New("load: /metrics has no process_resident_memory_bytes (not Linux?); pass --pid")
	}
	return s, nil
}

// readProcRSS reads VmRSS from /proc/PID/status.
func readProcRSS(pid int) (memSample, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memSample{}, fmt.Errorf("load: %w", err)
	}
	rss, err := parseVmRSS(b)
	return memSample{rss: rss}, err
}

// parseVmRSS reads the VmRSS line of a /proc/PID/status ("VmRSS:  1234 kB").
func parseVmRSS(status []byte) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64>>10 {
			break // a size is never negative, and its bytes must fit
		}
		return kb << 10, nil
	}
	return 0, errors.New("load: no VmRSS in /proc/PID/status")
}

// Print is the report for a person.
func (r *IdleReport) Print(w io.Writer) {
	fmt.Fprintf(w, "idle views on %s: %d sessions × %d views, read after %v idle\n\n", r.Broker, r.Sessions, r.Views,
		time.Duration(r.SettleSeconds*float64(time.Second)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tviews\tRSS before\tRSS after\tRSS/view\tgoroutines/view\theap/view\tstacks/view\t")
	row := func(name string, f *IdleFigures) {
		g, h, s := "-", "-", "-"
		if f.Goroutines != 0 {
			g, h, s = fmt.Sprintf("%.2f", f.Goroutines), fmtKB(f.HeapPerView), fmtKB(f.StackPerView)
		}
		fmt.Fprintf(tw, "%-8s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, f.Views, fmtMB(f.RSSBefore), fmtMB(f.RSSAfter), fmtKB(f.RSSPerView), g, h, s)
	}
	row("airlock", &r.Airlock)
	if r.Baseline != nil {
		row("baseline", r.Baseline)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "airlock: %s, read from %s\n", r.Airlock.Label, r.Airlock.Source)
	if r.Baseline != nil {
		fmt.Fprintf(w, "baseline: %s, read from %s\n", r.Baseline.Label, r.Baseline.Source)
		fmt.Fprintf(w, "ratio Airlock/baseline: RSS per view %.3g×\n", r.Ratio)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures were read early")
	}
}

func fmtKB(b float64) string { return fmt.Sprintf("%.1f KB", b/1000) }
func fmtMB(b int64) string   { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
