package main

import (
	"context"
	"os"
	"os/signal"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/channel/rtt"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// The floors `airlock load` measures the broker against run as processes
// of their own, started from this binary by the hidden commands below
// (cmd/airlock/internal/load/RATIONALE.md, "Why do the load tool's floor
// processes ship in the command?"); load.SpawnSelf and load.ServeFloor
// are the two ends of the exchange.

// spawnForwarder starts `airlock load forwarder` reading messages of at
// most maxMessage bytes; its Views asks it how many views it has
// registered.
func spawnForwarder(ctx context.Context, maxMessage int64) (*load.FloorProcess, error) {
	fp, ask, err := load.SpawnSelf(ctx, "forwarder", "load", "forwarder", "--max-message", strconv.FormatInt(maxMessage, 10))
	if err != nil {
		return nil, err
	}
	fp.Views = load.ForwarderViews(ask)
	return fp, nil
}

// spawnHTTPFloor starts `airlock load http-floor` on the baseline b, on
// a Unix socket when unix.
func spawnHTTPFloor(ctx context.Context, b load.Baseline, tool string, unix bool) (*load.FloorProcess, error) {
	args := []string{"load", "http-floor", "--baseline", b.Label, "--tool", tool}
	if unix {
		args = append(args, "--unix")
	}
	for name, dir := range b.Roots {
		args = append(args, "--root", name+"="+dir)
	}
	if b.CacheDir != "" {
		args = append(args, "--cache-dir", b.CacheDir)
	}
	fp, _, err := load.SpawnSelf(ctx, "bare HTTP floor", args...)
	return fp, err
}

// spawnRTTEcho starts `airlock load rtt-echo` answering answerSize bytes.
func spawnRTTEcho(ctx context.Context, answerSize int) (*load.FloorProcess, error) {
	fp, _, err := load.SpawnSelf(ctx, "rtt echo", "load", "rtt-echo", "--answer-size", strconv.Itoa(answerSize))
	return fp, err
}

// ignoreInterrupt is every floor command's first step. A Ctrl-C at the
// terminal reaches the whole process group; the floor ignores it, so the
// load, which catches it to report what it measured, is the one that ends
// it (by closing its stdin) once nothing runs on it.
func ignoreInterrupt() { signal.Ignore(os.Interrupt) }

// newLoadForwarderCmd is the hidden `airlock load forwarder`: the bare
// coder/websocket forwarder (broker/relay/baseline) alone in a process,
// so `load idle` can read its RSS the way it reads the broker's and `load
// relay` pays the same wake-ups between processes on both sides. It
// answers each "views" line on stdin with the number of views it has
// registered. It admits only its run (the secret) and reads no message
// over --max-message, which the run sets from its frame size.
func newLoadForwarderCmd() *cobra.Command {
	var maxMessage int64
	c := &cobra.Command{
		Use:    "forwarder",
		Short:  "serve the bare coder/websocket forwarder until stdin closes (for load idle and load relay)",
		Hidden: true,
		Args:   exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxMessage < 1 {
				return usageErr("--max-message must be at least 1, got %d", maxMessage)
			}
			ignoreInterrupt()
			return load.ServeForwarder(cmd.InOrStdin(), cmd.OutOrStdout(), maxMessage)
		},
	}
	c.Flags().Int64Var(&maxMessage, "max-message", 0, "the largest message in `BYTES` it reads; a bigger one closes its socket")
	return c
}

// newLoadHTTPFloorCmd is the hidden `airlock load http-floor`: a
// baseline's reactor behind a bare net/http server
// (executors/baseline.HTTPFloor) alone in a process, the third side of
// `load calls --reuse-instance`; with --unix on a Unix socket, for a
// broker reached over its own.
func newLoadHTTPFloorCmd() *cobra.Command {
	var label, tool, cacheDir string
	var unix bool
	roots := rootsFlag{}
	c := &cobra.Command{
		Use:    "http-floor",
		Short:  "serve a baseline's tool behind a bare net/http server until stdin closes (for load calls)",
		Hidden: true,
		Args:   exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if label == "" || tool == "" {
				return usageErr("--baseline and --tool are required")
			}
			ignoreInterrupt()
			return load.ServeHTTPFloor(cmd.InOrStdin(), cmd.OutOrStdout(), label, tool, roots, cacheDir, unix)
		},
	}
	fs := c.Flags()
	fs.StringVar(&label, "baseline", "", "the baseline's `SOURCE`: a plugin folder or builtin:ID")
	fs.StringVar(&tool, "tool", "", "the `TOOL` to serve")
	fs.Var(roots, "root", "the baseline's roots: `NAME=DIR` (repeatable)")
	fs.StringVar(&cacheDir, "cache-dir", "", "a wazero compilation cache `DIR` to compile through")
	fs.BoolVar(&unix, "unix", false, "listen on a Unix socket in a fresh folder only this user can enter, not a loopback port, and print unix:PATH")
	return c
}

// newLoadRTTEchoCmd is the hidden `airlock load rtt-echo`: the far end of
// the paired shape's rtt floor (broker/channel/rtt.Echo) alone in a
// process, as the environment it stands beside is one.
func newLoadRTTEchoCmd() *cobra.Command {
	var answerSize int
	c := &cobra.Command{
		Use:    "rtt-echo",
		Short:  "answer every WebSocket message with one frame of --answer-size bytes until stdin closes (for load calls --paired-descriptor)",
		Hidden: true,
		Args:   exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if answerSize < 2 || answerSize > rtt.MaxFrame {
				return usageErr("--answer-size must be from 2 to %d, got %d", rtt.MaxFrame, answerSize)
			}
			ignoreInterrupt()
			return load.ServeRTTEcho(cmd.InOrStdin(), cmd.OutOrStdout(), answerSize)
		},
	}
	c.Flags().IntVar(&answerSize, "answer-size", 0, "the size in `BYTES` of every answer")
	return c
}
