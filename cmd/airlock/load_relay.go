package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	relaybaseline "github.com/airlock/airlock/broker/relay/baseline"
)

// loadRelayFlags are the flags of `airlock load relay`.
type loadRelayFlags struct {
	*loadFlags
	sessions, views, size int
	baseline, noBaseline  bool
}

func parseLoadRelay(args []string, stderr io.Writer) (*loadRelayFlags, int) {
	fs := newFlags("load relay", stderr)
	f := &loadRelayFlags{loadFlags: addLoadFlags(fs)}
	fs.IntVar(&f.sessions, "sessions", 4, "`N` sessions, each with one host")
	fs.IntVar(&f.views, "views", 4, "`M` views per session")
	fs.IntVar(&f.size, "size", 256, "`BYTES` of each focusNode frame (at least the envelope, about 140)")
	fs.BoolVar(&f.baseline, "baseline", true, "measure the bare coder/websocket forwarder in the same run")
	fs.BoolVar(&f.noBaseline, "no-baseline", false, "measure the broker alone")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock load relay [--broker URL] [--sessions N] [--views M] [-d DURATION] [--warmup DURATION]")
		fmt.Fprintln(stderr, "         [--size BYTES] [--baseline|--no-baseline] [--json]")
		fmt.Fprintln(stderr, "\nMints N sessions (launch origin: the broker's own), connects one host and M views to each, and in")
		fmt.Fprintf(stderr, "turns has every host send ordered focusNode states, at most %d ahead of its slowest view, to the\n", relayWindow)
		fmt.Fprintln(stderr, "broker and to a bare coder/websocket forwarder in this process. Reports deliveries/s, one-way latency")
		fmt.Fprintln(stderr, "p50/p90/p99/max, dropped views (closed by the broker, 1013 slow-consumer), refusals (error messages)")
		fmt.Fprintln(stderr, "and the ratios. See airlock load --help.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return nil, code
	}
	if fs.NArg() > 0 || f.sessions < 1 || f.views < 1 || f.size < 0 || f.check() != nil {
		fs.Usage()
		return nil, exitUsage
	}
	return f, -1
}

// runLoadRelay is `airlock load relay`.
func runLoadRelay(args []string, stdout, stderr io.Writer) int {
	f, code := parseLoadRelay(args, stderr)
	if code >= 0 {
		return code
	}
	c, err := newV1Client(f.broker, f.tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "airlock load relay: %v\n", err)
		return exitUsage
	}
	base, origin, err := brokerBase(c.base)
	if err != nil {
		fmt.Fprintf(stderr, "airlock load relay: --broker: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := loadRelay(ctx, f, &localclient.Client{Base: base, Token: c.token}, origin, stderr)
	if err != nil {
		return fail(stderr, "load relay: %v", err)
	}
	if f.asJSON {
		printJSON(stdout, rep)
	} else {
		rep.print(stdout)
	}
	return exitOK
}

// loadRelay connects both topologies, runs them in turns and builds the
// report.
func loadRelay(ctx context.Context, f *loadRelayFlags, client *localclient.Client, origin string, stderr io.Writer) (*relayReport, error) {
	withBaseline := f.baseline && !f.noBaseline
	names := []string{"airlock"}
	if withBaseline {
		names = append(names, "baseline")
	}
	m := newMeter("deliveries", names...)
	p := f.plan(withBaseline)
	ttl := int64(math.Ceil((2*(p.warmup+p.duration) + 5*time.Minute).Seconds()))
	air, err := connectAirlock(ctx, client, origin, f, ttl, m)
	if err != nil {
		return nil, err
	}
	defer air.close()
	sides := []side{air}
	var bare *topology
	var fw *relaybaseline.Forwarder
	if withBaseline {
		if fw, bare, err = connectBare(ctx, f, m); err != nil {
			return nil, err
		}
		defer fw.Close()
		defer bare.close()
		sides = append(sides, bare)
	}
	stopProgress := startProgress(m, stderr, f.asJSON)
	measured := alternate(ctx, p, sides, m)
	stopProgress()
	rep := f.report(client.Base, p, ctx.Err() != nil)
	air.close() // the figures are read once every receive loop is done
	rep.Airlock = air.figures("airlock "+client.Base, measured[0])
	if bare != nil {
		bare.close()
		b := bare.figures("bare coder/websocket forwarder on "+fw.URL()+", in this process", measured[1])
		rep.Baseline = &b
		rep.Ratios = compare(rep.Airlock.DeliveriesPerSecond, b.DeliveriesPerSecond, rep.Airlock.LatencyMs, b.LatencyMs)
	}
	return rep, nil
}

// report is the report's header: what the run was asked to do.
func (f *loadRelayFlags) report(broker string, p plan, interrupted bool) *relayReport {
	return &relayReport{Command: "relay", Broker: broker, Sessions: f.sessions, Views: f.views,
		FrameBytes: f.size, Window: relayWindow, runInfo: runInfo{DurationSeconds: p.duration.Seconds(),
			WarmupSeconds: p.warmup.Seconds(), SliceSeconds: p.slice.Seconds(), Interrupted: interrupted}}
}

// connectAirlock mints the sessions and connects their hosts and views,
// every view of a session with the one view cookie its bootstrap set.
func connectAirlock(ctx context.Context, client *localclient.Client, origin string, f *loadRelayFlags, ttl int64, m *meter) (*topology, error) {
	t := newTopology(f.size, m, 0)
	for range f.sessions {
		if err := connectSession(ctx, t, client, origin, f.views, ttl); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

func connectSession(ctx context.Context, t *topology, client *localclient.Client, origin string, views int, ttl int64) error {
	minted, err := client.Mint(ctx, localclient.MintOptions{LaunchOrigin: origin, TTLSeconds: ttl})
	if err != nil {
		return err
	}
	ck, _, err := client.Bootstrap(ctx, origin, minted.WorkspaceSessionID, minted.ViewCredential)
	if err != nil {
		return err
	}
	host, err := localclient.DialHost(ctx, client.Base, minted)
	if err != nil {
		return err
	}
	if _, err := host.Hello(ctx); err != nil {
		_ = host.Close()
		return err
	}
	s := t.addSession(host, minted.WorkspaceSessionID)
	for range views {
		v, err := localclient.DialView(ctx, client.Base, origin, minted.WorkspaceSessionID, ck)
		if err != nil {
			return err
		}
		if _, err := v.Hello(ctx); err != nil {
			_ = v.Close()
			return err
		}
		t.addView(s, v)
	}
	return nil
}

// connectBare starts the bare forwarder and connects the same topology
// to it, one room (path) per session.
func connectBare(ctx context.Context, f *loadRelayFlags, m *meter) (*relaybaseline.Forwarder, *topology, error) {
	fw, err := relaybaseline.Start()
	if err != nil {
		return nil, nil, err
	}
	t := newTopology(f.size, m, 1)
	err = dialBare(ctx, fw, t, f.sessions, f.views)
	if err != nil {
		t.close()
		_ = fw.Close()
		return nil, nil, err
	}
	return fw, t, nil
}

func dialBare(ctx context.Context, fw *relaybaseline.Forwarder, t *topology, sessions, views int) error {
	for i := range sessions {
		room := fmt.Sprintf("%s/s%d", fw.URL(), i)
		// As long as a minted id (ws_ and 22 characters), so frames are the
		// same size even below the envelope's own.
		id := fmt.Sprintf("ws_bare%018d", i)
		host, err := localclient.Dial(ctx, room, localclient.DialOptions{Origin: relaybaseline.HostOrigin, SessionID: id})
		if err != nil {
			return err
		}
		s := t.addSession(host, id)
		for range views {
			v, err := localclient.Dial(ctx, room, localclient.DialOptions{SessionID: id})
			if err != nil {
				return err
			}
			t.addView(s, v)
		}
	}
	for fw.Views() < sessions*views { // every view registered before any host sends
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// relayReport is the report of `airlock load relay`, as printed with
// --json.
type relayReport struct {
	Command    string `json:"command"`
	Broker     string `json:"broker"`
	Sessions   int    `json:"sessions"`
	Views      int    `json:"viewsPerSession"`
	FrameBytes int    `json:"frameBytes"`
	Window     int    `json:"window"`
	runInfo
	Airlock  relayFigures  `json:"airlock"`
	Baseline *relayFigures `json:"baseline,omitempty"`
	Ratios   *ratios       `json:"ratios,omitempty"`
}

func (r *relayReport) print(w io.Writer) {
	r.printHeader(w, fmt.Sprintf("relay on %s: %d sessions × %d views, %d-byte focusNode frames, window %d",
		r.Broker, r.Sessions, r.Views, r.FrameBytes, r.Window), r.Baseline != nil)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tdeliveries\tdeliveries/s\tp50\tp90\tp99\tmax\tdropped views\trefusals\t")
	for name, f := range r.sides() {
		l := f.LatencyMs
		fmt.Fprintf(tw, "%-8s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", name, f.Deliveries, f.DeliveriesPerSecond,
			fmtMs(l.P50), fmtMs(l.P90), fmtMs(l.P99), fmtMs(l.Max), f.DroppedViews, f.Refusals)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Baseline != nil {
		fmt.Fprintf(w, "baseline: %s\n", r.Baseline.Label)
		printRatios(w, "deliveries/s", r.Ratios)
	}
	for name, f := range r.sides() {
		if f.DroppedViews > 0 || f.SendErrors > 0 {
			fmt.Fprintf(w, "%s: dropped views by close %v, %d hosts failed to send (first: %s)\n", name, f.Closes, f.SendErrors, f.FirstError)
		}
	}
}

// sides lists the figures in print order.
func (r *relayReport) sides() iter.Seq2[string, *relayFigures] { return sides(&r.Airlock, r.Baseline) }
