package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/localclient"
	relaybaseline "github.com/airlock/airlock/broker/relay/baseline"
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

// spawnForwarder starts `airlock load forwarder` (this binary) and reads
// the URL it prints; closing its stdin stops it.
func spawnForwarder(ctx context.Context) (*load.FloorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := exec.Command(self, "load", "forwarder")
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, err
	}
	var mu sync.Mutex // one question at a time on the pipes
	stopped := false
	stopFn := func() error {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return nil
		}
		stopped = true
		_ = stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		return c.Wait()
	}
	lines := bufio.NewReader(stdout)
	views := func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := io.WriteString(stdin, "views\n"); err != nil {
			return 0, fmt.Errorf("the forwarder: %w", err)
		}
		l, err := lines.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("the forwarder: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil {
			return 0, fmt.Errorf("the forwarder answered %q", l)
		}
		return n, nil
	}
	url := make(chan string, 1)
	go func() {
		l, _ := lines.ReadString('\n')
		url <- strings.TrimSpace(l)
	}()
	select {
	case u := <-url:
		if !strings.HasPrefix(u, "http://") {
			_ = stopFn()
			return nil, errors.New("the forwarder did not start")
		}
		return &load.FloorProcess{URL: u, PID: c.Process.Pid, Views: views, Stop: stopFn}, nil
	case <-ctx.Done():
		_ = stopFn()
		return nil, ctx.Err()
	}
}

// newLoadForwarderCmd is the hidden `airlock load forwarder`: the bare
// coder/websocket forwarder (broker/relay/baseline) alone in a process,
// so `load idle` can read its RSS the way it reads the broker's and `load
// relay` pays the same wake-ups between processes on both sides. It
// prints its URL, answers each "views" line on stdin with the number of
// views it has registered, and serves until its stdin closes.
func newLoadForwarderCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "forwarder",
		Short:  "serve the bare coder/websocket forwarder until stdin closes (for load idle and load relay)",
		Hidden: true,
		Args:   exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fw, err := relaybaseline.Start()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, fw.URL())
			in := bufio.NewScanner(cmd.InOrStdin())
			for in.Scan() {
				if in.Text() == "views" {
					fmt.Fprintln(out, fw.Views())
				}
			}
			return fw.Close()
		},
	}
}
