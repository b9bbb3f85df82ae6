package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

func init() { register(newLoadCmd) }

// newLoadCmd is `airlock load calls|relay`: it drives a running broker and
// reports every figure beside a baseline measured in the same run, and
// their ratio, so an SRE scraping /metrics during the run reads figures
// that do not depend on how busy the machine was.
func newLoadCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "load",
		Short: "drive a running broker and compare with a same-run baseline: load calls | relay | idle",
		Long:  loadHelp,
	}
	groupCommand(c)
	c.AddCommand(newLoadCallsCmd(), newLoadRelayCmd(), newLoadIdleCmd(), newLoadForwarderCmd(), newLoadHTTPFloorCmd(), newLoadRTTEchoCmd())
	return c
}

const loadHelp = `Drives a running broker (--broker, default ` + defaultBroker + `) for a fixed
time and reports each figure together with a baseline measured in the same
run, and the ratio Airlock/baseline:

  calls   POST /v1/calls from concurrent callers; the baseline is the same
          tool of the same module run with plain wazero and no Airlock
          code, at the same concurrency (--baseline).
  relay   host-to-views fan-out over /local/ws; the baseline is a bare
          coder/websocket forwarder started as a process of its own on a
          loopback port, driven by the same workload code.
  idle    resident memory per idle /local/ws view; the baseline is the
          bare forwarder in a process of its own (see load idle --help).

The two sides of calls and relay take turns in slices of 2 s until each has run --duration
(after a --warmup of its own), so a change in the machine's load during
the run weighs on both alike; a run takes about twice --duration. The
turns make /metrics saw-toothed at about half the rate: to watch a
dashboard during a load, --steady drives only the broker for the whole
run (no baseline, no ratios). Sessions a run mints are ended when it ends. Ratios
above 1 for latency, and below 1 for throughput, mean Airlock is slower.
Latency percentiles are within 1% (a log-linear histogram); max is exact.

A progress line goes to stderr once a second (not with --json). Ctrl-C
ends the run early and reports what was measured. Exit 0 when a report was
printed (read its outcomes), 1 when the load could not run, 2 for bad
flags or a missing launch token, 3 when the broker refused the token.`

// loadFlags are the flags both workloads share.
type loadFlags struct {
	broker *brokerFlags
	o      load.Options
	asJSON bool
	steady bool
}

func addLoadFlags(fs *pflag.FlagSet) *loadFlags {
	f := &loadFlags{broker: addBrokerFlags(fs, "default "+defaultBroker)}
	fs.DurationVarP(&f.o.Duration, "duration", "d", 10*time.Second, "measure each side for `DURATION`")
	fs.DurationVar(&f.o.Warmup, "warmup", time.Second, "run each side unmeasured for `DURATION` first")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON, and no progress line")
	fs.BoolVar(&f.steady, "steady", false, "drive only the broker, in one stretch, with no baseline or floor: a steady load for a dashboard watching /metrics (no ratios)")
	return f
}

// check names the first flag whose value cannot make a run.
func (f *loadFlags) check() error {
	switch {
	case f.o.Duration <= 0:
		return usageErr("--duration must be positive, got %v", f.o.Duration)
	case f.o.Warmup < 0:
		return usageErr("--warmup must not be negative, got %v", f.o.Warmup)
	}
	return nil
}

// options are the engine's options: progress goes to stderr unless the
// report is JSON.
func (f *loadFlags) options(stderr io.Writer) load.Options {
	o := f.o
	if !f.asJSON {
		o.Progress = stderr
	}
	return o
}

// print prints the report, as JSON with --json.
func (f *loadFlags) print(w io.Writer, rep interface{ Print(io.Writer) }) {
	if f.asJSON {
		load.PrintJSON(w, rep)
	} else {
		rep.Print(w)
	}
}

// loadCallsFlags are the flags of `airlock load calls`.
type loadCallsFlags struct {
	*loadFlags
	tool, args, descriptor string
	concurrency            callersFlag
	baseline               string
	reuse, httpFloor       bool
	roots                  rootsFlag
	settings               *settingsFlags // --config and --data: where the broker's compilation cache is
	prof                   *profileFlag
	paired                 *pairedFlags // load_paired.go
}

// newLoadCallsCmd is `airlock load calls`.
func newLoadCallsCmd() *cobra.Command {
	f := &loadCallsFlags{roots: rootsFlag{}, concurrency: callersFlag{4}}
	c := &cobra.Command{
		Use:   "calls",
		Short: "POST /v1/calls from concurrent callers, beside plain wazero",
		Long: "POSTs the call to /v1/calls from -c callers on keep-alive connections, and in turns runs the same\n" +
			"tool of the same module with plain wazero at the same concurrency (per call: instantiate, _initialize,\n" +
			"airlock_alloc, airlock_call for a reactor; instantiate with the args on stdin for a command).\n" +
			"Reports calls, calls/s, latency p50/p90/p99/max, each outcome, and the ratios. See airlock load --help.\n" +
			"The baseline compiles through the broker's compilation cache (found from --config, --data and the\n" +
			"environment as `airlock serve` finds it) when that folder exists, so a module the broker compiled is\n" +
			"not compiled again; it never creates one.\n" +
			"With --reuse-instance on a reactor a third side, bare http, runs the same module on reused instances behind a\n" +
			"bare net/http server in a process of its own, and the report adds the ratio Airlock/bare http: what the broker's\n" +
			"own layers cost once the HTTP hop is in the floor; with --broker unix:PATH it listens on a Unix socket too\n" +
			"(--http-floor=false leaves it out).\n" +
			"With --paired-descriptor ID --local-descriptor ID it measures the tool on a paired environment's descriptor\n" +
			"beside the same tool on the broker's own and a bare loopback WebSocket round trip to an echo in a process of\n" +
			"its own (local + rtt, the channel's floor) in one run, and prints the ratio paired/(local + rtt); cmd/airlock/PERFORMANCE.md has a recipe.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return runLoadCalls(cmd, f) },
	}
	fs := c.Flags()
	f.loadFlags = addLoadFlags(fs)
	fs.StringVar(&f.tool, "tool", "read_notes", "the `TOOL` to call")
	fs.StringVar(&f.args, "args", `{"path":"welcome.md"}`, argsHelp)
	fs.StringVar(&f.descriptor, "descriptor", "", "the descriptor `ID`, when several declare the tool")
	fs.VarP(&f.concurrency, "concurrency", "c", "`CALLERS` in parallel, on each side; a list (1,4) measures each in turn")
	fs.StringVar(&f.baseline, "baseline", "", "the `SOURCE` of the module the baseline runs with plain wazero: a plugin folder, builtin:ID or none (default: builtin:ID when the broker's tool is a bundled one)")
	fs.BoolVar(&f.reuse, "reuse-instance", false, "baseline: each caller reuses one reactor instance instead of a fresh one per call")
	fs.BoolVar(&f.httpFloor, "http-floor", true, "with --reuse-instance on a reactor, also measure the baseline behind a bare net/http server in a process of its own")
	fs.Var(f.roots, "root", "the baseline's roots: `NAME=DIR`, the folder the broker serves as NAME (repeatable)")
	f.settings = addSettingsFlags(fs, "data")
	f.prof = addProfileFlag(fs)
	f.paired = addPairedFlags(fs)
	return c
}

// checkPaths holds --baseline, when it is a plugin folder, and every
// --root to the one path rule (checkPath).
func (f *loadCallsFlags) checkPaths() error {
	if f.baseline != "" && f.baseline != "none" && !strings.HasPrefix(f.baseline, "builtin:") {
		if err := checkPath("--baseline ", f.baseline, folder); err != nil {
			return err
		}
	}
	names := slices.Sorted(maps.Keys(f.roots))
	for _, name := range names {
		if err := checkPath("--root "+name+"=", f.roots[name], folder); err != nil {
			return err
		}
	}
	return nil
}

// runLoadCalls runs `airlock load calls`.
func runLoadCalls(cmd *cobra.Command, f *loadCallsFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := f.paired.check(cmd.Flags()); err != nil {
		return err
	}
	if f.steady {
		switch {
		case cmd.Flags().Changed("baseline") && f.baseline != "none":
			return usageErr("--steady drives only the broker: leave --baseline out")
		case f.paired.on():
			return usageErr("--steady drives only the broker: the paired shape needs its round-trip floor, so leave --steady out")
		}
		f.baseline, f.httpFloor = "none", false
	}
	if err := f.checkPaths(); err != nil {
		return err
	}
	o := load.CallsOptions{Options: f.options(cmd.ErrOrStderr()), Concurrency: slices.Max(f.concurrency), Reuse: f.reuse}
	if f.httpFloor {
		o.HTTPFloor = spawnHTTPFloor
	}
	o.RTTEcho = spawnRTTEcho
	if err := o.Check(); err != nil {
		return usageErr("%v", err)
	}
	callArgs, err := readArgs(f.args, cmd.InOrStdin())
	if err != nil {
		return err
	}
	c, err := f.broker.client()
	if err != nil {
		return err
	}
	defer load.KeepAlive(c, o.Concurrency).CloseIdleConnections()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile, err := f.prof.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	ds, err := c.Tools(ctx)
	if err != nil {
		return brokerErr(err)
	}
	if f.paired.on() {
		return runLoadPaired(ctx, cmd.OutOrStdout(), f, c, ds, callArgs, o)
	}
	call, err := v1client.NewCall(ds, f.tool, f.descriptor, callArgs)
	if err != nil {
		return err
	}
	b, err := load.ChooseBaseline(ctx, f.baseline, call, f.roots, c)
	if err != nil {
		return usageErr("%v", err)
	}
	if b.CacheDir, err = brokerCacheDir(f.settings); err != nil {
		return err
	}
	reps, err := load.Calls(ctx, c, call, b, o, f.concurrency...)
	if err != nil {
		return brokerErr(err)
	}
	load.PrintReports(cmd.OutOrStdout(), reps, f.asJSON)
	return nil
}

// brokerCacheDir is the broker's compilation cache for the settings
// given (load.BrokerCacheDir).
func brokerCacheDir(sf *settingsFlags) (string, error) {
	cfg, err := sf.load()
	if err != nil {
		return "", err
	}
	return load.BrokerCacheDir(cfg), nil
}

// loadRelayFlags are the flags of `airlock load relay`.
type loadRelayFlags struct {
	*loadFlags
	sessions, views, size int
	baseline, noBaseline  bool
	rate                  *relayRateFlags // load_rate.go
}

// newLoadRelayCmd is `airlock load relay`.
func newLoadRelayCmd() *cobra.Command {
	f := &loadRelayFlags{}
	c := &cobra.Command{
		Use:   "relay",
		Short: "host-to-views fan-out over /local/ws, beside a bare forwarder",
		Long: "Mints N sessions (launch origin: the broker's own), connects one host and M views to each, and in\n" +
			fmt.Sprintf("turns has every host send ordered focusNode states, at most %d ahead of its slowest view, to the\n", load.RelayWindow) +
			"broker and to a bare coder/websocket forwarder in a process of its own. Reports deliveries/s, one-way latency\n" +
			"p50/p90/p99/max, dropped views (closed by the broker, 1013 slow-consumer), refusals (error messages)\n" +
			"and the ratios. With --rate each host sends on a schedule instead; --shapes runs several views×rate\n" +
			"shapes and prints one table. See airlock load --help.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return runLoadRelay(cmd, f) },
	}
	fs := c.Flags()
	f.loadFlags = addLoadFlags(fs)
	fs.IntVar(&f.sessions, "sessions", 4, "`N` sessions, each with one host")
	fs.IntVar(&f.views, "views", 4, "`M` views per session")
	fs.IntVar(&f.size, "size", 256, "`BYTES` of each focusNode frame (at least the envelope, about 140)")
	fs.BoolVar(&f.baseline, "baseline", true, "measure the bare coder/websocket forwarder in the same run")
	fs.BoolVar(&f.noBaseline, "no-baseline", false, "measure the broker alone")
	f.rate = addRelayRateFlags(fs)
	return c
}

// checkTopology names the first of --sessions and --views that cannot
// make a run (load relay and load idle).
func checkTopology(sessions, views int) error {
	switch {
	case sessions < 1:
		return usageErr("--sessions must be at least 1, got %d", sessions)
	case views < 1:
		return usageErr("--views must be at least 1, got %d", views)
	}
	return nil
}

// runLoadRelay runs `airlock load relay`.
func runLoadRelay(cmd *cobra.Command, f *loadRelayFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := checkTopology(f.sessions, f.views); err != nil {
		return err
	}
	if f.size < 0 {
		return usageErr("--size must not be negative, got %d", f.size)
	}
	shapes, err := f.rate.check()
	if err != nil {
		return err
	}
	o := load.RelayOptions{Options: f.options(cmd.ErrOrStderr()), Sessions: f.sessions, Views: f.views, FrameBytes: f.size,
		Rate: f.rate.rate, Baseline: f.baseline && !f.noBaseline && !f.steady, Floor: spawnForwarder}
	if err := o.Check(); err != nil {
		return usageErr("%v", err)
	}
	client, origin, err := f.broker.localClient()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if shapes != nil {
		rep, err := load.RelayShapes(ctx, client, origin, o, shapes)
		if err != nil {
			return brokerErr(err)
		}
		f.print(cmd.OutOrStdout(), rep)
		return nil
	}
	rep, err := load.Relay(ctx, client, origin, o)
	if err != nil {
		return brokerErr(err)
	}
	f.print(cmd.OutOrStdout(), rep)
	return nil
}
