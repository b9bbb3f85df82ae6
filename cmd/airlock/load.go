package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
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
	broker    string
	tokenFile string
	duration  time.Duration
	warmup    time.Duration
	asJSON    bool
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	f := &loadFlags{}
	fs.StringVar(&f.broker, "broker", defaultBroker, "the broker's base `URL`")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the launch token from `FILE` (else TENSORVIZ_LOCAL_TOKEN)")
	fs.DurationVar(&f.duration, "d", 10*time.Second, "measure each side for `DURATION`")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "same as -d")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "run each side unmeasured for `DURATION` first")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON, and no progress line")
	return f
}

// check refuses durations that cannot make a run.
func (f *loadFlags) check() error {
	if f.duration <= 0 || f.warmup < 0 {
		return errLoadDuration
	}
	return nil
}

// plan is the schedule of the run: with a baseline the sides alternate
// in slices; alone, Airlock runs in one stretch.
func (f *loadFlags) plan(withBaseline bool) plan {
	p := plan{warmup: f.warmup, duration: f.duration, slice: f.duration}
	if withBaseline {
		p.slice = min(loadSlice, f.duration)
	}
	return p
}

// loadSlice is how long one side runs before the other takes its turn:
// long enough that the calls cut off at each turn (at most one per
// caller) weigh little, short enough to follow the machine's load.
const loadSlice = 2 * time.Second

// errLoadDuration refuses a run that could measure nothing.
var errLoadDuration = errors.New("-d must be positive and --warmup not negative")
