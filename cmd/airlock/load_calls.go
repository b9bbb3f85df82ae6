package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/airlock/airlock/executors/baseline"
	"github.com/airlock/airlock/executors/wire"
)

// callTimeout bounds one call of the load, so a stuck broker ends the
// run with transport errors instead of hanging it.
const callTimeout = time.Minute

// loadCallsFlags are the flags of `airlock load calls`.
type loadCallsFlags struct {
	*loadFlags
	tool, args, descriptor string
	concurrency            int
	baseline               string
	reuse                  bool
	roots                  rootsFlag
	settings               *settingsFlags // --config and --data: where the broker's compilation cache is
}

func parseLoadCalls(args []string, stderr io.Writer) (*loadCallsFlags, int) {
	fs := newFlags("load calls", stderr)
	f := &loadCallsFlags{loadFlags: addLoadFlags(fs), roots: rootsFlag{}}
	fs.StringVar(&f.tool, "tool", "read_notes", "the `TOOL` to call")
	fs.StringVar(&f.args, "args", `{"path":"welcome.md"}`, "the tool's arguments as a JSON `OBJECT`")
	fs.StringVar(&f.descriptor, "descriptor", "", "the descriptor `ID`, when several declare the tool")
	fs.IntVar(&f.concurrency, "c", 4, "`CALLERS` in parallel, on each side")
	fs.IntVar(&f.concurrency, "concurrency", 4, "same as -c")
	fs.StringVar(&f.baseline, "baseline", "", "the `SOURCE` of the module the baseline runs with plain wazero: a plugin folder, builtin:ID or none (default: builtin:ID when the broker's tool is a bundled one)")
	fs.BoolVar(&f.reuse, "reuse-instance", false, "baseline: each caller reuses one reactor instance instead of a fresh one per call")
	fs.Var(f.roots, "root", "the baseline's roots: `NAME=DIR`, the folder the broker serves as NAME (repeatable)")
	f.settings = addSettingsFlags(fs, "data")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock load calls [--broker URL] [--tool TOOL] [--args JSON] [--descriptor ID] [-c N] [-d DURATION]")
		fmt.Fprintln(stderr, "         [--warmup DURATION] [--baseline DIR|builtin:ID|none] [--reuse-instance] [--root NAME=DIR]... [--data DIR] [--json]")
		fmt.Fprintln(stderr, "\nPOSTs the call to /v1/calls from -c callers on keep-alive connections, and in turns runs the same")
		fmt.Fprintln(stderr, "tool of the same module with plain wazero at the same concurrency (per call: instantiate, _initialize,")
		fmt.Fprintln(stderr, "airlock_alloc, airlock_call for a reactor; instantiate with the args on stdin for a command).")
		fmt.Fprintln(stderr, "Reports calls, calls/s, latency p50/p90/p99/max, each outcome, and the ratios. See airlock load --help.")
		fmt.Fprintln(stderr, "The baseline compiles through the broker's compilation cache (found from --config, --data and the")
		fmt.Fprintln(stderr, "environment as `airlock serve` finds it) when that folder exists, so a module the broker compiled is")
		fmt.Fprintln(stderr, "not compiled again; it never creates one.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return nil, code
	}
	if fs.NArg() > 0 || f.concurrency < 1 || f.check() != nil {
		fs.Usage()
		return nil, exitUsage
	}
	return f, -1
}

// runLoadCalls is `airlock load calls`.
func runLoadCalls(args []string, stdout, stderr io.Writer) int {
	f, code := parseLoadCalls(args, stderr)
	if code >= 0 {
		return code
	}
	callArgs, err := wire.CompactMember([]byte(f.args))
	if err != nil {
		fmt.Fprintln(stderr, "airlock load calls: --args must be one JSON object")
		return exitUsage
	}
	c, err := newV1Client(f.broker, f.tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "airlock load calls: %v\n", err)
		return exitUsage
	}
	transport := keepAlive(c, f.concurrency)
	defer transport.CloseIdleConnections()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ds, err := c.tools(ctx)
	if err != nil {
		return fail(stderr, "load calls: %v", err)
	}
	call, err := buildCall(ds, f.tool, f.descriptor, callArgs)
	if err != nil {
		return fail(stderr, "load calls: %v", err)
	}
	choice, err := chooseBaseline(ctx, f.baseline, call, f.roots, c)
	if err == nil {
		choice.cacheDir, err = brokerCacheDir(f.settings)
	}
	if err != nil {
		fmt.Fprintf(stderr, "airlock load calls: %v\n", err)
		return exitUsage
	}
	rep, err := loadCalls(ctx, f, c, call, choice, stderr)
	if err != nil {
		return fail(stderr, "load calls: %v", err)
	}
	if f.asJSON {
		printJSON(stdout, rep)
	} else {
		rep.print(stdout)
	}
	return exitOK
}

// keepAlive gives the client a transport that keeps one idle connection
// per caller (the default keeps two), so every call reuses a connection.
func keepAlive(c *v1Client, callers int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = callers
	t.MaxIdleConns = max(t.MaxIdleConns, callers)
	c.http = &http.Client{Transport: t, Timeout: callTimeout}
	return t
}

// loadCalls compiles the baseline, runs both sides in turns and builds
// the report.
func loadCalls(ctx context.Context, f *loadCallsFlags, c *v1Client, call wire.Call, choice baselineChoice, stderr io.Writer) (*callsReport, error) {
	rep := &callsReport{Command: "calls", Broker: c.base, Tool: call.Tool, DescriptorID: call.DescriptorID,
		Concurrency: f.concurrency, BaselineSkipped: choice.skipped,
		runInfo: runInfo{DurationSeconds: f.duration.Seconds(), WarmupSeconds: f.warmup.Seconds()}}
	runner, err := startBaseline(ctx, choice, f.asJSON, stderr)
	if err != nil {
		return nil, err
	}
	names := []string{"airlock"}
	if runner != nil {
		defer runner.Close(context.WithoutCancel(ctx))
		names = append(names, "baseline")
	}
	m := newMeter("calls", names...)
	air := newCallers(f.concurrency, brokerOp(c, call, f.concurrency), m, 0)
	sides := []side{air}
	var base *callers
	if runner != nil {
		op, closeInstances := baselineOp(runner, call.Tool, call.Args, f.reuse, f.concurrency)
		defer closeInstances(context.WithoutCancel(ctx))
		base = newCallers(f.concurrency, op, m, 1)
		sides = append(sides, base)
	}
	p := f.plan(runner != nil)
	rep.SliceSeconds = p.slice.Seconds()
	stopProgress := startProgress(m, stderr, f.asJSON)
	measured := alternate(ctx, p, sides, m)
	stopProgress()
	rep.Interrupted = ctx.Err() != nil
	rep.Airlock = sumTallies("airlock "+c.base, air.tallies, measured[0])
	if runner != nil {
		b := sumTallies(baselineLabel(choice.label, runner.Style(), f.reuse), base.tallies, measured[1])
		rep.Baseline = &b
		rep.Ratios = compare(rep.Airlock.CallsPerSecond, b.CallsPerSecond, rep.Airlock.LatencyMs, b.LatencyMs)
	}
	return rep, nil
}

// startBaseline compiles the baseline's module, or says why there is
// none; nil without an error means no baseline.
func startBaseline(ctx context.Context, choice baselineChoice, quiet bool, stderr io.Writer) (*baseline.Runner, error) {
	if choice.skipped != "" {
		if !quiet {
			fmt.Fprintf(stderr, "airlock load calls: no baseline: %s\n", choice.skipped)
		}
		return nil, nil
	}
	if !quiet {
		fmt.Fprintf(stderr, "airlock load calls: compiling the baseline module (%s)…\n", choice.label)
	}
	return baseline.New(ctx, choice.module, baseline.Options{Roots: choice.roots, CacheDir: choice.cacheDir})
}

// baselineLabel says what the baseline ran and how.
func baselineLabel(label string, style baseline.Style, reuse bool) string {
	mode := "fresh instance per call"
	switch {
	case style == baseline.Command:
		mode = "command, instance per call"
	case reuse:
		mode = "one reused instance per caller"
	}
	return fmt.Sprintf("plain wazero %s (%s, %s)", label, style, mode)
}

// callsReport is the report of `airlock load calls`, as printed with
// --json.
type callsReport struct {
	Command      string `json:"command"`
	Broker       string `json:"broker"`
	Tool         string `json:"tool"`
	DescriptorID string `json:"descriptorId"`
	Concurrency  int    `json:"concurrency"`
	runInfo
	Airlock         callsFigures  `json:"airlock"`
	Baseline        *callsFigures `json:"baseline,omitempty"`
	BaselineSkipped string        `json:"baselineSkipped,omitempty"`
	Ratios          *ratios       `json:"ratios,omitempty"`
}

// print is the report for a person: one table, the ratios, the outcomes.
func (r *callsReport) print(w io.Writer) {
	r.printHeader(w, fmt.Sprintf("%s on %s (descriptor %s), %d callers", r.Tool, r.Broker, r.DescriptorID, r.Concurrency),
		r.Baseline != nil)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcalls\tcalls/s\tp50\tp90\tp99\tmax\t")
	for name, f := range r.sides() {
		l := f.LatencyMs
		fmt.Fprintf(tw, "%-8s\t%d\t%.1f\t%s\t%s\t%s\t%s\t\n", name, f.Calls, f.CallsPerSecond,
			fmtMs(l.P50), fmtMs(l.P90), fmtMs(l.P99), fmtMs(l.Max))
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Baseline == nil {
		fmt.Fprintf(w, "no baseline: %s\n", r.BaselineSkipped)
	} else {
		fmt.Fprintf(w, "baseline: %s\n", r.Baseline.Label)
		printRatios(w, "calls/s", r.Ratios)
		if !r.Airlock.allOK() || !r.Baseline.allOK() {
			fmt.Fprintln(w, "note: not every call was answered ok, so the two sides did not do the same work")
		}
	}
	for name, f := range r.sides() {
		printOutcomes(w, name, f)
	}
}

// sides lists the figures in print order.
func (r *callsReport) sides() iter.Seq2[string, *callsFigures] { return sides(&r.Airlock, r.Baseline) }

// printOutcomes lists each outcome, then the calls that got no answer.
func printOutcomes(w io.Writer, name string, f *callsFigures) {
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
