package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/baseline"
	"github.com/airlock/airlock/executors/wire"
)

// callTimeout bounds one call of the load, so a stuck broker ends the
// run with transport errors instead of hanging it.
const callTimeout = time.Minute

// CallsOptions are the options of the calls workload.
type CallsOptions struct {
	Options
	// Concurrency is the callers in parallel on each side, at least 1.
	Concurrency int
	// Reuse has each baseline caller reuse one reactor instance instead
	// of a fresh one per call.
	Reuse bool
	// HTTPFloor, when set, starts the baseline's module behind a bare
	// net/http server in a process of its own (`airlock load http-floor`),
	// on a Unix socket when unix (the broker is reached over its own);
	// with Reuse on a reactor the run measures it as a third side, the
	// pooled call's floor with the HTTP hop between two processes in it.
	HTTPFloor func(ctx context.Context, b Baseline, tool string, unix bool) (*FloorProcess, error)
	// RTTEcho, when set, starts the paired shape's rtt echo in a process
	// of its own (`airlock load rtt-echo`), as the environment it stands
	// beside is one; unset, the echo runs in the load tool's process.
	RTTEcho func(ctx context.Context, answerSize int) (*FloorProcess, error)
}

// errConcurrency refuses a calls run without callers.
var errConcurrency = errors.New("load: the concurrency must be at least 1")

// Check refuses options that cannot make a run.
func (o CallsOptions) Check() error {
	if o.Concurrency < 1 {
		return errConcurrency
	}
	return o.check()
}

// KeepAlive gives c a transport that keeps one idle connection per caller
// (the default keeps two), so every call reuses a connection, and bounds
// each request by callTimeout. Close the transport's idle connections
// when the run is done. The transport is c's own when it has one (the
// Unix socket's dialer), else the default.
func KeepAlive(c *v1client.Client, callers int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if c.HTTP != nil {
		if own, ok := c.HTTP.Transport.(*http.Transport); ok {
			t = own.Clone()
		}
	}
	t.MaxIdleConnsPerHost = callers
	t.MaxIdleConns = max(t.MaxIdleConns, callers)
	c.HTTP = &http.Client{Transport: t, Timeout: callTimeout}
	return t
}

// Calls posts call through c from callers and, in turns, runs the
// baseline b at the same concurrency, then reports both: one report for
// each number of callers in shapes, measured one after the other. The
// baseline is compiled, and the bare HTTP floor started, once for all of
// them. A ctx that ends cuts the run short: the last report covers what
// was measured until then, and no later shape runs.
func Calls(ctx context.Context, c *v1client.Client, call wire.Call, b Baseline, o CallsOptions, shapes ...int) ([]*CallsReport, error) {
	for _, n := range shapes {
		o.Concurrency = n
		if err := o.Check(); err != nil {
			return nil, err
		}
	}
	runner, err := startBaseline(ctx, b, o.Progress)
	if err != nil {
		return nil, err
	}
	if runner != nil {
		defer runner.Close(context.WithoutCancel(ctx))
	}
	// A command has no instance to reuse: it runs to its exit.
	reuse := runner != nil && o.Reuse && runner.Style() == baseline.Reactor
	var floor *FloorProcess
	if reuse && o.HTTPFloor != nil {
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, "airlock load calls: starting the bare HTTP floor (the baseline behind net/http, a process of its own)…")
		}
		if floor, err = o.HTTPFloor(ctx, b, call.Tool, c.Socket != ""); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		defer floor.Stop()
	}
	return eachShape(shapes, o, func(r *CallsReport) bool { return r.Interrupted }, func(o CallsOptions) (*CallsReport, error) {
		return callsShape(ctx, c, call, b, o, runner, reuse, floor)
	})
}

// callsShape is one shape of Calls: o.Concurrency callers on each side,
// against the runner and the floor when there are.
func callsShape(ctx context.Context, c *v1client.Client, call wire.Call, b Baseline, o CallsOptions,
	runner *baseline.Runner, reuse bool, floor *FloorProcess) (*CallsReport, error) {
	rep := &CallsReport{Command: "calls", Broker: c.Where(), Tool: call.Tool, DescriptorID: call.DescriptorID,
		Concurrency: o.Concurrency, BaselineSkipped: b.Skipped,
		RunInfo: RunInfo{DurationSeconds: o.Duration.Seconds(), WarmupSeconds: o.Warmup.Seconds()}}
	names := []string{"airlock"}
	if runner != nil {
		names = append(names, "baseline")
	}
	if floor != nil {
		names = append(names, "bare http")
	}
	m := newMeter("calls", names...)
	op, closeConns, err := directOp(c, call, o.Concurrency, "broker")
	if err != nil {
		return nil, err
	}
	defer closeConns()
	air := newCallers(o.Concurrency, op, m, 0)
	sides := []side{air}
	var base, bare *callers
	if runner != nil {
		op, closeInstances := baselineOp(runner, call.Tool, call.Args, reuse, o.Concurrency)
		defer closeInstances(context.WithoutCancel(ctx))
		base = newCallers(o.Concurrency, op, m, 1)
		sides = append(sides, base)
	}
	if floor != nil {
		op, closeConns, err := directOp(&v1client.Client{Base: floor.URL, Socket: floor.Socket, Token: floor.Secret}, call, o.Concurrency, "bare HTTP floor")
		if err != nil {
			return nil, err
		}
		defer closeConns()
		bare = newCallers(o.Concurrency, op, m, 2)
		sides = append(sides, bare)
	}
	p := o.plan(runner != nil)
	rep.SliceSeconds = p.slice.Seconds()
	stopProgress := startProgress(m, o.Progress)
	measured := alternate(ctx, p, sides, m)
	stopProgress()
	rep.Interrupted = ctx.Err() != nil
	rep.Airlock = sumTallies("airlock "+c.Where(), air.tallies, measured[0])
	if runner != nil {
		bf := sumTallies(baselineLabel(b.Label, runner.Style(), o.Reuse), base.tallies, measured[1])
		rep.Baseline = &bf
		rep.Ratios = compare(rep.Airlock.CallsPerSecond, bf.CallsPerSecond, rep.Airlock.LatencyMs, bf.LatencyMs)
	}
	if bare != nil {
		hf := sumTallies(httpFloorLabel(floor), bare.tallies, measured[2])
		rep.HTTPFloor = &hf
		rep.HTTPFloorRatios = compare(rep.Airlock.CallsPerSecond, hf.CallsPerSecond, rep.Airlock.LatencyMs, hf.LatencyMs)
	}
	return rep, nil
}

// httpFloorLabel says what the bare HTTP floor is, and over which
// transport: the ratio against it is the broker's own cost only when the
// two are reached alike.
func httpFloorLabel(floor *FloorProcess) string {
	over := ""
	if floor.Socket != "" {
		over = " over a Unix socket, as the broker"
	}
	return fmt.Sprintf("the same reused instances behind a bare net/http server in its own process (pid %d)%s: its run's secret checked, the envelope read with encoding/json, no schema, bounds or metrics", floor.PID, over)
}

// startBaseline compiles the baseline's module, or says why there is
// none; nil without an error means no baseline.
func startBaseline(ctx context.Context, b Baseline, progress io.Writer) (*baseline.Runner, error) {
	if b.Skipped != "" {
		if progress != nil {
			fmt.Fprintf(progress, "airlock load calls: no baseline: %s\n", b.Skipped)
		}
		return nil, nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "airlock load calls: compiling the baseline module (%s)…\n", b.Label)
	}
	return baseline.New(ctx, b.Module, baseline.Options{Roots: b.Roots, CacheDir: b.CacheDir})
}

// baselineLabel says what the baseline ran and how.
func baselineLabel(label string, style baseline.Style, reuse bool) string {
	mode := "fresh instance per call"
	switch {
	case style == baseline.Command:
		mode = "fresh instance per call, args on stdin"
	case reuse:
		mode = "one reused instance per caller"
	}
	return fmt.Sprintf("plain wazero %s (%s, %s)", label, style, mode)
}

// CallsReport is the report of the calls workload; its JSON is what
// `airlock load calls --json` prints.
type CallsReport struct {
	Command      string `json:"command"`
	Broker       string `json:"broker"`
	Tool         string `json:"tool"`
	DescriptorID string `json:"descriptorId"`
	Concurrency  int    `json:"concurrency"`
	RunInfo
	Airlock         CallsFigures  `json:"airlock"`
	Baseline        *CallsFigures `json:"baseline,omitempty"`
	BaselineSkipped string        `json:"baselineSkipped,omitempty"`
	Ratios          *Ratios       `json:"ratios,omitempty"`
	// HTTPFloor is the baseline behind a bare HTTP server (CallsOptions),
	// and HTTPFloorRatios Airlock's figures over its.
	HTTPFloor       *CallsFigures `json:"httpFloor,omitempty"`
	HTTPFloorRatios *Ratios       `json:"httpFloorRatios,omitempty"`
}

// Print is the report for a person: one table, the ratios, the outcomes.
func (r *CallsReport) Print(w io.Writer) {
	r.printHeader(w, fmt.Sprintf("%s on %s (descriptor %s), %d callers", r.Tool, r.Broker, r.DescriptorID, r.Concurrency),
		r.Baseline != nil)
	tw := callsTable(w)
	for name, f := range r.Sides() {
		callsRow(tw, len("bare http"), name, f)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Baseline == nil {
		fmt.Fprintf(w, "no baseline: %s\n", r.BaselineSkipped)
	} else {
		fmt.Fprintf(w, "baseline: %s\n", r.Baseline.Label)
		if r.HTTPFloor != nil {
			fmt.Fprintf(w, "bare http: %s\n", r.HTTPFloor.Label)
		}
		printRatios(w, "baseline", "calls/s", r.Ratios)
		if r.HTTPFloor != nil {
			printRatios(w, "bare http", "calls/s", r.HTTPFloorRatios)
		}
		if !r.Airlock.AllOK() || !r.Baseline.AllOK() || (r.HTTPFloor != nil && !r.HTTPFloor.AllOK()) {
			fmt.Fprintln(w, "note: not every call was answered ok, so the sides did not do the same work")
		}
	}
	for name, f := range r.Sides() {
		printOutcomes(w, name, f)
	}
}

// callsTable starts a table of calls figures under its header; Flush it.
func callsTable(w io.Writer) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcalls\tcalls/s\tp50\tp90\tp99\tmax\t")
	return tw
}

// callsRow is one side's row, its name padded to width.
func callsRow(tw io.Writer, width int, name string, f *CallsFigures) {
	l := f.LatencyMs
	fmt.Fprintf(tw, "%-*s\t%d\t%.1f\t%s\t%s\t%s\t%s\t\n", width, name, f.Calls, f.CallsPerSecond,
		fmtMs(l.P50), fmtMs(l.P90), fmtMs(l.P99), fmtMs(l.Max))
}

// Sides lists the figures in print order.
func (r *CallsReport) Sides() iter.Seq2[string, *CallsFigures] {
	return func(yield func(string, *CallsFigures) bool) {
		for name, f := range sides(&r.Airlock, r.Baseline) {
			if !yield(name, f) {
				return
			}
		}
		if r.HTTPFloor != nil {
			yield("bare http", r.HTTPFloor)
		}
	}
}

// printOutcomes lists each outcome, then the calls that got no answer.
func printOutcomes(w io.Writer, name string, f *CallsFigures) {
	out, _ := json.Marshal(f.Outcomes)
	fmt.Fprintf(w, "%s outcomes: %s", name, out)
	if f.TransportErrors > 0 {
		fmt.Fprintf(w, ", %d transport errors (first: %s)", f.TransportErrors, f.FirstError)
	} else if f.FirstError != "" {
		fmt.Fprintf(w, " (first failure: %s)", f.FirstError)
	}
	fmt.Fprintln(w)
}

// secs prints a whole or fractional number of seconds as a duration.
func secs(s float64) string { return time.Duration(s * float64(time.Second)).String() }
