package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// runLoad is `airlock load calls|relay`: it drives a running broker and
// reports every figure beside a baseline measured in the same run, and
// their ratio, so an SRE scraping /metrics during the run reads figures
// that do not depend on how busy the machine was.
func runLoad(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, loadHelp)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "calls":
		return runLoadCalls(args[1:], stdout, stderr)
	case "relay":
		return runLoadRelay(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "airlock load: unknown workload %q (calls or relay; try airlock load --help)\n", args[0])
	return exitUsage
}

const loadHelp = `usage: airlock load calls [flags]   POST /v1/calls from concurrent callers
       airlock load relay [flags]   host-to-views fan-out over /local/ws

Drives a running broker (--broker, default ` + defaultBroker + `) for a fixed
time and reports each figure together with a baseline measured in the same
run, and the ratio Airlock/baseline:

  calls   the same tool of the same module run with plain wazero and no
          Airlock code, at the same concurrency (--baseline).
  relay   a bare coder/websocket forwarder started in this process on a
          loopback port, driven by the same workload code.

The two sides take turns in slices of 2 s until each has run --duration
(after a --warmup of its own), so a change in the machine's load during
the run weighs on both alike; a run takes about twice --duration. Ratios
above 1 for latency, and below 1 for throughput, mean Airlock is slower.
Latency percentiles are within 1% (a log-linear histogram); max is exact.

A progress line goes to stderr once a second (not with --json). Ctrl-C
ends the run early and reports what was measured. The launch token comes
from TENSORVIZ_LOCAL_TOKEN (or AIRLOCK_LOCAL_TOKEN) or --token-file, never
from an argument. Exit 0 when a report was printed (read its outcomes),
1 when the load could not run, 2 for bad flags.

airlock load calls --help and airlock load relay --help list the flags.
`

// loadFlags are the flags both workloads share.
type loadFlags struct {
	broker string
	token  *secretFlag
	o      load.Options
	asJSON bool
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	f := &loadFlags{}
	fs.StringVar(&f.broker, "broker", defaultBroker, "the broker's base `URL`")
	f.token = addSecretFlag(fs, secret.LaunchToken)
	fs.DurationVar(&f.o.Duration, "d", 10*time.Second, "measure each side for `DURATION`")
	fs.DurationVar(&f.o.Duration, "duration", 10*time.Second, "same as -d")
	fs.DurationVar(&f.o.Warmup, "warmup", time.Second, "run each side unmeasured for `DURATION` first")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON, and no progress line")
	return f
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
	concurrency            int
	baseline               string
	reuse                  bool
	roots                  rootsFlag
	settings               *settingsFlags // --config and --data: where the broker's compilation cache is
}

func parseLoadCalls(args []string, stderr io.Writer) (*loadCallsFlags, load.CallsOptions, int) {
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
		return nil, load.CallsOptions{}, code
	}
	o := load.CallsOptions{Options: f.options(stderr), Concurrency: f.concurrency, Reuse: f.reuse}
	if fs.NArg() > 0 || o.Check() != nil {
		fs.Usage()
		return nil, o, exitUsage
	}
	return f, o, -1
}

// runLoadCalls is `airlock load calls`.
func runLoadCalls(args []string, stdout, stderr io.Writer) int {
	f, o, code := parseLoadCalls(args, stderr)
	if code >= 0 {
		return code
	}
	callArgs, err := wire.CompactMember([]byte(f.args))
	if err != nil {
		fmt.Fprintln(stderr, "airlock load calls: --args must be one JSON object")
		return exitUsage
	}
	c, err := newV1Client(f.broker, f.token)
	if err != nil {
		fmt.Fprintf(stderr, "airlock load calls: %v\n", err)
		return exitUsage
	}
	defer load.KeepAlive(c, o.Concurrency).CloseIdleConnections()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ds, err := c.Tools(ctx)
	if err != nil {
		return fail(stderr, "load calls: %v", err)
	}
	call, err := v1client.NewCall(ds, f.tool, f.descriptor, callArgs)
	if err != nil {
		return fail(stderr, "load calls: %v", err)
	}
	b, err := load.ChooseBaseline(ctx, f.baseline, call, f.roots, c)
	if err == nil {
		b.CacheDir, err = brokerCacheDir(f.settings)
	}
	if err != nil {
		fmt.Fprintf(stderr, "airlock load calls: %v\n", err)
		return exitUsage
	}
	rep, err := load.Calls(ctx, c, call, b, o)
	if err != nil {
		return fail(stderr, "load calls: %v", err)
	}
	f.print(stdout, rep)
	return exitOK
}

// brokerCacheDir is where `airlock serve` with the same settings keeps
// its compilation cache (exec.cache_dir, else DATA/compile-cache), or ""
// when that folder does not exist: the load never creates one.
func brokerCacheDir(sf *settingsFlags) (string, error) {
	cfg, err := sf.load()
	if err != nil {
		return "", err
	}
	dir := plugins.CacheDir(cfg)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", nil
	}
	return dir, nil
}

// loadRelayFlags are the flags of `airlock load relay`.
type loadRelayFlags struct {
	*loadFlags
	sessions, views, size int
	baseline, noBaseline  bool
}

func parseLoadRelay(args []string, stderr io.Writer) (*loadRelayFlags, load.RelayOptions, int) {
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
		fmt.Fprintf(stderr, "turns has every host send ordered focusNode states, at most %d ahead of its slowest view, to the\n", load.RelayWindow)
		fmt.Fprintln(stderr, "broker and to a bare coder/websocket forwarder in this process. Reports deliveries/s, one-way latency")
		fmt.Fprintln(stderr, "p50/p90/p99/max, dropped views (closed by the broker, 1013 slow-consumer), refusals (error messages)")
		fmt.Fprintln(stderr, "and the ratios. See airlock load --help.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return nil, load.RelayOptions{}, code
	}
	o := load.RelayOptions{Options: f.options(stderr), Sessions: f.sessions, Views: f.views, FrameBytes: f.size,
		Baseline: f.baseline && !f.noBaseline}
	if fs.NArg() > 0 || o.Check() != nil {
		fs.Usage()
		return nil, o, exitUsage
	}
	return f, o, -1
}

// runLoadRelay is `airlock load relay`.
func runLoadRelay(args []string, stdout, stderr io.Writer) int {
	f, o, code := parseLoadRelay(args, stderr)
	if code >= 0 {
		return code
	}
	c, err := newV1Client(f.broker, f.token)
	if err != nil {
		fmt.Fprintf(stderr, "airlock load relay: %v\n", err)
		return exitUsage
	}
	base, origin, err := brokerBase(c.Base)
	if err != nil {
		fmt.Fprintf(stderr, "airlock load relay: --broker: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := load.Relay(ctx, &localclient.Client{Base: base, Token: c.Token}, origin, o)
	if err != nil {
		return fail(stderr, "load relay: %v", err)
	}
	f.print(stdout, rep)
	return exitOK
}
