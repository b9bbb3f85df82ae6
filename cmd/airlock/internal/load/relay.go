package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	relaybaseline "github.com/airlock/airlock/broker/relay/baseline"
)

// RelayOptions are the options of the relay workload.
type RelayOptions struct {
	Options
	// Sessions is how many sessions are minted, each with one host; at
	// least 1.
	Sessions int
	// Views is how many views connect to each session; at least 1.
	Views int
	// FrameBytes is the size of each focusNode frame, never less than
	// the envelope itself.
	FrameBytes int
	// Rate is how many messages each host sends a second, on a schedule
	// (rate.go); 0 sends as fast as the views keep up within RelayWindow.
	Rate int
	// Baseline also measures a bare coder/websocket forwarder, in turns
	// with the broker.
	Baseline bool
	// Floor starts that forwarder in a process of its own, as the broker
	// is, so both sides pay the same wake-ups between processes, reading
	// messages of at most maxMessage bytes; nil runs it in this process.
	Floor func(ctx context.Context, maxMessage int64) (*FloorProcess, error)
}

// MaxMessage is the bare forwarder's read limit for a run of frameBytes
// frames: the frame and the largest envelope one carries (padFor pads a
// frame to frameBytes against a shorter envelope), so none of the run's
// messages is cut and a bigger one, which only a stranger sends, closes
// its socket before it is buffered.
func MaxMessage(frameBytes int) int64 {
	env := localclient.Envelope("ws_"+strings.Repeat("x", 22), "focusNode", focus{NodeID: "layer-7", T: math.MaxInt64}, math.MaxInt64)
	return int64(max(frameBytes, 0) + len(env))
}

// forwarder is the bare forwarder the baseline side talks to, in this
// process or in its own. Either admits only dials with Header, its run's
// secret (SecretGuard).
type forwarder interface {
	URL() string
	Header() http.Header
	Views() (int, error)
	Close() error
	Where() string
}

// inProcess is relaybaseline.Forwarder running in this process.
type inProcess struct {
	*relaybaseline.Forwarder
	secret string
}

func (f inProcess) Views() (int, error) { return f.Forwarder.Views(), nil }
func (f inProcess) Header() http.Header { return SecretHeader(f.secret) }
func (f inProcess) Where() string       { return "in this process" }

// ownProcess is the forwarder in a FloorProcess.
type ownProcess struct{ *FloorProcess }

func (f ownProcess) URL() string         { return f.FloorProcess.URL }
func (f ownProcess) Views() (int, error) { return f.FloorProcess.Views() }
func (f ownProcess) Header() http.Header { return SecretHeader(f.Secret) }
func (f ownProcess) Close() error        { return f.Stop() }
func (f ownProcess) Where() string       { return fmt.Sprintf("process %d", f.PID) }

// errTopology refuses a relay run with nobody to relay to.
var errTopology = errors.New("load: sessions and views must be at least 1, the frame size not negative")

// Check refuses options that cannot make a run.
func (o RelayOptions) Check() error {
	if o.Sessions < 1 || o.Views < 1 || o.FrameBytes < 0 {
		return errTopology
	}
	if err := checkRate(o.Rate); err != nil {
		return err
	}
	return o.check()
}

// Relay mints o.Sessions sessions through client (launch origin:
// origin), connects a host and o.Views views to each, and in turns with
// the bare forwarder has every host send ordered focusNode states, then
// reports both. A ctx that ends cuts the run short: the report covers
// what was measured until then.
func Relay(ctx context.Context, client *localclient.Client, origin string, o RelayOptions) (*RelayReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	names := []string{"airlock"}
	if o.Baseline {
		names = append(names, "baseline")
	}
	m := newMeter("deliveries", names...)
	p := o.plan(o.Baseline)
	ttl := int64(math.Ceil((2*(p.warmup+p.duration) + 5*time.Minute).Seconds()))
	ms := &mintedSessions{client: client}
	defer ms.end()
	air, err := connectAirlock(ctx, ms, origin, o, ttl, m)
	if err != nil {
		return nil, err
	}
	defer air.close()
	sides := []side{air}
	var bare *topology
	var fw forwarder
	if o.Baseline {
		if fw, bare, err = connectBare(ctx, o, m); err != nil {
			return nil, err
		}
		defer fw.Close()
		defer bare.close()
		sides = append(sides, bare)
	}
	stopProgress := startProgress(m, o.Progress)
	measured := alternate(ctx, p, sides, m)
	stopProgress()
	rep := o.report(client.Base, p, ctx.Err() != nil)
	air.close() // the figures are read once every receive loop is done
	rep.Airlock = air.figures("airlock "+client.Base, measured[0])
	if bare != nil {
		bare.close()
		b := bare.figures("bare coder/websocket forwarder on "+fw.URL()+", "+fw.Where(), measured[1])
		rep.Baseline = &b
		rep.Ratios = compare(rep.Airlock.DeliveriesPerSecond, b.DeliveriesPerSecond, rep.Airlock.LatencyMs, b.LatencyMs)
	}
	return rep, nil
}

// report is the report's header: what the run was asked to do.
func (o RelayOptions) report(broker string, p plan, interrupted bool) *RelayReport {
	return &RelayReport{Command: "relay", Broker: broker, Sessions: o.Sessions, Views: o.Views,
		FrameBytes: o.FrameBytes, Rate: o.Rate, Window: window(o.Rate), RunInfo: RunInfo{DurationSeconds: p.duration.Seconds(),
			WarmupSeconds: p.warmup.Seconds(), SliceSeconds: p.slice.Seconds(), Interrupted: interrupted}}
}

// connectAirlock mints the sessions and connects their hosts and views,
// every view of a session with the one view cookie its bootstrap set.
func connectAirlock(ctx context.Context, ms *mintedSessions, origin string, o RelayOptions, ttl int64, m *meter) (*topology, error) {
	t := newTopology(o.FrameBytes, m, 0)
	t.rate = o.Rate
	for range o.Sessions {
		if err := connectSession(ctx, t, ms, origin, o.Views, ttl); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

func connectSession(ctx context.Context, t *topology, ms *mintedSessions, origin string, views int, ttl int64) error {
	client := ms.client
	minted, ck, host, err := openSession(ctx, ms, origin, ttl)
	if err != nil {
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
func connectBare(ctx context.Context, o RelayOptions, m *meter) (forwarder, *topology, error) {
	fw, err := startForwarder(ctx, o.Floor, MaxMessage(o.FrameBytes))
	if err != nil {
		return nil, nil, err
	}
	t := newTopology(o.FrameBytes, m, 1)
	t.rate = o.Rate
	err = dialBare(ctx, fw, t, o.Sessions, o.Views)
	if err != nil {
		t.close()
		_ = fw.Close()
		return nil, nil, err
	}
	return fw, t, nil
}

// startForwarder starts the bare forwarder with floor, or in this process
// when floor is nil, reading messages of at most maxMessage bytes.
func startForwarder(ctx context.Context, floor func(context.Context, int64) (*FloorProcess, error), maxMessage int64) (forwarder, error) {
	if floor != nil {
		fp, err := floor(ctx, maxMessage)
		if err != nil {
			return nil, err
		}
		return ownProcess{fp}, nil
	}
	secret := NewSecret()
	fw, err := StartForwarder(maxMessage, secret)
	if err != nil {
		return nil, err
	}
	return inProcess{fw, secret}, nil
}

// StartForwarder is the bare forwarder as a load run serves it, in this
// process or in `airlock load forwarder`'s: reading messages of at most
// maxMessage bytes, and admitting only dials that carry secret.
func StartForwarder(maxMessage int64, secret string) (*relaybaseline.Forwarder, error) {
	return relaybaseline.Start(relaybaseline.Options{MaxMessage: maxMessage,
		Guard: func(h http.Handler) http.Handler { return SecretGuard(secret, h) }})
}

func dialBare(ctx context.Context, fw forwarder, t *topology, sessions, views int) error {
	for i := range sessions {
		room := fmt.Sprintf("%s/s%d", fw.URL(), i)
		// As long as a minted id (ws_ and 22 characters), so frames are the
		// same size even below the envelope's own.
		id := fmt.Sprintf("ws_bare%018d", i)
		host, err := localclient.Dial(ctx, room, localclient.DialOptions{Origin: relaybaseline.HostOrigin, SessionID: id, Header: fw.Header()})
		if err != nil {
			return err
		}
		s := t.addSession(host, id)
		for range views {
			v, err := localclient.Dial(ctx, room, localclient.DialOptions{SessionID: id, Header: fw.Header()})
			if err != nil {
				return err
			}
			t.addView(s, v)
		}
	}
	for { // every view registered before any host sends
		n, err := fw.Views()
		if err != nil {
			return err
		}
		if n >= sessions*views {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// RelayReport is the report of the relay workload; its JSON is what
// `airlock load relay --json` prints.
type RelayReport struct {
	Command    string `json:"command"`
	Broker     string `json:"broker"`
	Sessions   int    `json:"sessions"`
	Views      int    `json:"viewsPerSession"`
	FrameBytes int    `json:"frameBytes"`
	Rate       int    `json:"ratePerSession,omitempty"` // host messages/s; absent: as fast as the window lets
	Window     int    `json:"window"`
	RunInfo
	Airlock  RelayFigures  `json:"airlock"`
	Baseline *RelayFigures `json:"baseline,omitempty"`
	Ratios   *Ratios       `json:"ratios,omitempty"`
}

// Print is the report for a person: one table, the ratios, the dropped
// views.
func (r *RelayReport) Print(w io.Writer) {
	r.printHeader(w, fmt.Sprintf("relay on %s: %d sessions × %d views, %d-byte focusNode frames, %swindow %d",
		r.Broker, r.Sessions, r.Views, r.FrameBytes, r.rateWords(), r.Window), r.Baseline != nil)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tdeliveries\tdeliveries/s\tp50\tp90\tp99\tmax\tdropped views\trefusals\t")
	for name, f := range r.Sides() {
		l := f.LatencyMs
		fmt.Fprintf(tw, "%-8s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", name, f.Deliveries, f.DeliveriesPerSecond,
			fmtMs(l.P50), fmtMs(l.P90), fmtMs(l.P99), fmtMs(l.Max), f.DroppedViews, f.Refusals)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Baseline != nil {
		fmt.Fprintf(w, "baseline: %s\n", r.Baseline.Label)
		printRatios(w, "baseline", "deliveries/s", r.Ratios)
	}
	for name, f := range r.Sides() {
		if f.DroppedViews > 0 || f.SendErrors > 0 {
			fmt.Fprintf(w, "%s: dropped views by close %v, %d hosts failed to send (first: %s)\n", name, f.Closes, f.SendErrors, f.FirstError)
		}
	}
}

// Sides lists the figures in print order.
func (r *RelayReport) Sides() iter.Seq2[string, *RelayFigures] { return sides(&r.Airlock, r.Baseline) }
