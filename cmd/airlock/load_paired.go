package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
	"github.com/airlock/airlock/executors/wire"
)

// pairedFlags are the paired-environment shape of `airlock load calls`:
// the same tool measured through the broker on a descriptor a paired
// environment serves and on one the broker serves itself, beside a bare
// loopback round trip (cmd/airlock/internal/load/RATIONALE.md, "Why does `airlock load calls`
// measure a paired environment against local + rtt in one run?").
type pairedFlags struct {
	paired, local string
}

func addPairedFlags(fs *pflag.FlagSet) *pairedFlags {
	f := &pairedFlags{}
	fs.StringVar(&f.paired, "paired-descriptor", "", "paired shape: the descriptor `ID` a paired environment serves the tool under (with --local-descriptor)")
	fs.StringVar(&f.local, "local-descriptor", "", "paired shape: the descriptor `ID` the broker serves the same tool under itself (with --paired-descriptor)")
	return f
}

// on reports whether the paired shape was asked for.
func (f *pairedFlags) on() bool { return f.paired != "" || f.local != "" }

// check refuses a paired shape that is half given, compares a descriptor
// with itself, or is mixed with the flags of the plain-wazero baseline,
// which it replaces.
func (f *pairedFlags) check(fs *pflag.FlagSet) error {
	if !f.on() {
		return nil
	}
	switch {
	case f.paired == "" || f.local == "":
		return usageErr("--paired-descriptor and --local-descriptor go together: name both")
	case f.paired == f.local:
		return usageErr("--paired-descriptor and --local-descriptor must name two descriptors, got %q twice", f.paired)
	}
	for _, name := range []string{"descriptor", "baseline", "reuse-instance"} {
		if fs.Changed(name) {
			return usageErr("--%s does not apply to the paired shape, which compares with local + rtt", name)
		}
	}
	return nil
}

// calls makes the two calls from the broker's descriptors: the paired
// one must be served by a paired environment, the local one by the
// broker itself.
func (f *pairedFlags) calls(ds []wire.Descriptor, tool string, args json.RawMessage) (load.PairedCalls, error) {
	var pc load.PairedCalls
	var err error
	if pc.Paired, err = v1client.NewCall(ds, tool, f.paired, args); err != nil {
		return pc, err
	}
	if pc.Local, err = v1client.NewCall(ds, tool, f.local, args); err != nil {
		return pc, err
	}
	for _, d := range ds {
		switch d.DescriptorID {
		case f.paired:
			pc.PairedExecutor = d.Executor
		case f.local:
			pc.LocalExecutor = d.Executor
		}
	}
	switch {
	case !strings.HasPrefix(pc.PairedExecutor, "machine:"):
		return pc, usageErr("--paired-descriptor %s is served by %s, not a paired environment (airlock tools --broker lists where each lives)", f.paired, pc.PairedExecutor)
	case pc.LocalExecutor != "local":
		return pc, usageErr("--local-descriptor %s is served by %s, not the broker itself", f.local, pc.LocalExecutor)
	}
	return pc, nil
}

// runLoadPaired runs the paired shape once per concurrency and prints the
// reports.
func runLoadPaired(ctx context.Context, w io.Writer, f *loadCallsFlags, c *v1client.Client, ds []wire.Descriptor, args json.RawMessage, o load.CallsOptions) error {
	pc, err := f.paired.calls(ds, f.tool, args)
	if err != nil {
		return err
	}
	reps, err := load.PairedShapes(ctx, c, pc, o, f.concurrency...)
	if err != nil {
		return brokerErr(err)
	}
	load.PrintReports(w, reps, f.asJSON)
	return nil
}
