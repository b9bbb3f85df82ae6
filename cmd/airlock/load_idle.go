package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// loadIdleFlags are the flags of `airlock load idle`.
type loadIdleFlags struct {
	broker     *brokerFlags
	o          load.IdleOptions
	noBaseline bool
	asJSON     bool
}

// newLoadIdleCmd is `airlock load idle`: what an idle view costs the
// broker in resident memory, beside the bare forwarder in its own process.
func newLoadIdleCmd() *cobra.Command {
	f := &loadIdleFlags{}
	c := &cobra.Command{
		Use:   "idle",
		Short: "RSS per idle /local/ws view, beside a bare forwarder in its own process",
		Long: "Reads the broker's resident memory (process_resident_memory_bytes from its /metrics, or VmRSS of\n" +
			"--pid), mints N sessions (launch origin: the broker's own), connects one host and M views to each\n" +
			"(hello answered, every viewState read by the host), lets them sit idle for --settle, reads it again\n" +
			"and reports the growth per view. Then, with the broker's views closed, it does the same against a\n" +
			"bare coder/websocket forwarder that it starts as a separate process of this binary, so both figures\n" +
			"are one process's RSS. The broker must allow the views: http.max_connections above N×(M+1) and\n" +
			"local.max_views_per_session at least M. This process holds one socket per view (ulimit -n).",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return runLoadIdle(cmd, f) },
	}
	fs := c.Flags()
	f.broker = addBrokerFlags(fs, "default "+defaultBroker)
	fs.IntVar(&f.o.Sessions, "sessions", 10, "`N` sessions, each with one host")
	fs.IntVar(&f.o.Views, "views", 100, "`M` views per session")
	fs.DurationVar(&f.o.Settle, "settle", 10*time.Second, "how long the views sit idle before the memory is read")
	fs.IntVar(&f.o.Dialers, "dialers", 16, "views connecting at once")
	fs.IntVar(&f.o.BrokerPID, "pid", 0, "read the broker's RSS from /proc/`PID`/status instead of its /metrics")
	fs.BoolVar(&f.noBaseline, "no-baseline", false, "measure the broker alone")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON, and no progress lines")
	return c
}

func runLoadIdle(cmd *cobra.Command, f *loadIdleFlags) error {
	o := f.o
	if err := checkTopology(o.Sessions, o.Views); err != nil {
		return err
	}
	switch {
	case o.Dialers < 1:
		return usageErr("--dialers must be at least 1, got %d", o.Dialers)
	case o.Settle < 0:
		return usageErr("--settle must not be negative, got %v", o.Settle)
	}
	if err := o.Check(); err != nil {
		return usageErr("%v", err)
	}
	if !f.asJSON {
		o.Progress = cmd.ErrOrStderr()
	}
	if !f.noBaseline {
		o.Floor = spawnForwarder
	}
	client, origin, err := f.broker.localClient()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := load.Idle(ctx, client, origin, o)
	if err != nil {
		return brokerErr(err)
	}
	if f.asJSON {
		load.PrintJSON(cmd.OutOrStdout(), rep)
	} else {
		rep.Print(cmd.OutOrStdout())
	}
	return nil
}

// localClient is the /local client of --broker with the launch token,
// and the broker's origin.
func (b *brokerFlags) localClient() (*localclient.Client, string, error) {
	base, origin, err := b.base()
	if err != nil {
		return nil, "", err
	}
	token, err := b.token.read()
	if err != nil {
		return nil, "", err
	}
	return &localclient.Client{Base: base, Token: token}, origin, nil
}
