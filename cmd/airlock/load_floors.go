package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/channel/rtt"
	relaybaseline "github.com/airlock/airlock/broker/relay/baseline"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// The floors `airlock load` measures the broker against run as processes
// of their own, started from this binary by hidden commands, so both
// sides pay the same wake-ups between processes (cmd/airlock/internal/load/RATIONALE.md, "What does
// the relay baseline leave out, and what does it share?", and "Why does
// the paired shape's rtt echo run in a process of its own?"). Each reads
// its run's secret from the first line of its stdin (cmd/airlock/internal/load/RATIONALE.md, "Why
// does a floor process take a secret, on its stdin?"), prints its URL on
// its first line of stdout, and serves until its stdin closes.

// spawnSelf starts `airlock load ARGS…` (this binary) with a fresh secret
// and reads the URL it prints. ask writes one line to its stdin and reads
// one line back; closing its stdin (Stop) ends it. An error says that the
// floor named what did not start, and why (the child's own reason is on
// stderr, which it shares).
func spawnSelf(ctx context.Context, what string, args ...string) (fp *load.FloorProcess, ask func(string) (string, error), err error) {
	defer func() {
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("the %s did not start: %w", what, err)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	c := exec.Command(self, append([]string{"load"}, args...)...)
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, nil, err
	}
	secret := load.NewSecret()
	if _, err := io.WriteString(stdin, secret+"\n"); err != nil {
		_ = stdin.Close()
		return nil, nil, errors.Join(err, c.Wait())
	}
	var mu sync.Mutex // one question at a time on the pipes
	stopped := false
	stop := func() error {
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
	ask = func(q string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := io.WriteString(stdin, q+"\n"); err != nil {
			return "", fmt.Errorf("the %s: %w", what, err)
		}
		l, err := lines.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("the %s: %w", what, err)
		}
		return strings.TrimSpace(l), nil
	}
	url := make(chan string, 1)
	go func() {
		l, _ := lines.ReadString('\n')
		url <- strings.TrimSpace(l)
	}()
	select {
	case u := <-url:
		if !strings.HasPrefix(u, "http://") {
			if err := stop(); err != nil {
				return nil, nil, err // its exit status
			}
			return nil, nil, fmt.Errorf("it printed %q, not its URL", u)
		}
		return &load.FloorProcess{URL: u, PID: c.Process.Pid, Secret: secret, Stop: stop}, ask, nil
	case <-ctx.Done():
		_ = stop()
		return nil, nil, ctx.Err()
	}
}

// spawnForwarder starts `airlock load forwarder` reading messages of at
// most maxMessage bytes; its Views asks it how many views it has
// registered.
func spawnForwarder(ctx context.Context, maxMessage int64) (*load.FloorProcess, error) {
	fp, ask, err := spawnSelf(ctx, "forwarder", "forwarder", "--max-message", strconv.FormatInt(maxMessage, 10))
	if err != nil {
		return nil, err
	}
	fp.Views = func() (int, error) {
		l, err := ask("views")
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(l)
		if err != nil {
			return 0, fmt.Errorf("the forwarder answered %q", l)
		}
		return n, nil
	}
	return fp, nil
}

// spawnHTTPFloor starts `airlock load http-floor` on the baseline b.
func spawnHTTPFloor(ctx context.Context, b load.Baseline, tool string) (*load.FloorProcess, error) {
	args := []string{"http-floor", "--baseline", b.Label, "--tool", tool}
	for name, dir := range b.Roots {
		args = append(args, "--root", name+"="+dir)
	}
	if b.CacheDir != "" {
		args = append(args, "--cache-dir", b.CacheDir)
	}
	fp, _, err := spawnSelf(ctx, "bare HTTP floor", args...)
	return fp, err
}

// spawnRTTEcho starts `airlock load rtt-echo` answering answerSize bytes.
func spawnRTTEcho(ctx context.Context, answerSize int) (*load.FloorProcess, error) {
	fp, _, err := spawnSelf(ctx, "rtt echo", "rtt-echo", "--answer-size", strconv.Itoa(answerSize))
	return fp, err
}

// floorChild is a hidden floor command's side of spawnSelf: start is
// given the run's secret (stdin's first line) and returns the URL to
// print and how to stop; each later line of stdin is answered with answer
// (when set) until stdin closes, and then the floor is stopped.
//
// A Ctrl-C at the terminal reaches the whole process group; the floor
// ignores it, so the load, which catches it to report what it measured,
// is the one that ends it (by closing its stdin) once nothing runs on it.
func floorChild(cmd *cobra.Command, start func(secret string) (url string, stop func() error, err error), answer func(string) string) (err error) {
	signal.Ignore(os.Interrupt)
	in := bufio.NewScanner(cmd.InOrStdin())
	if !in.Scan() {
		return errors.New("no secret on stdin: this command is started by airlock load")
	}
	url, stop, err := start(in.Text())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, url)
	for in.Scan() {
		if answer != nil {
			fmt.Fprintln(out, answer(in.Text()))
		}
	}
	return nil
}

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
			var fw *relaybaseline.Forwarder
			return floorChild(cmd, func(secret string) (string, func() error, error) {
				var err error
				if fw, err = load.StartForwarder(maxMessage, secret); err != nil {
					return "", nil, err
				}
				return fw.URL(), fw.Close, nil
			}, func(q string) string {
				if q == "views" {
					return strconv.Itoa(fw.Views())
				}
				return "?"
			})
		},
	}
	c.Flags().Int64Var(&maxMessage, "max-message", 0, "the largest message in `BYTES` it reads; a bigger one closes its socket")
	return c
}

// newLoadHTTPFloorCmd is the hidden `airlock load http-floor`: a
// baseline's reactor behind a bare net/http server
// (executors/baseline.HTTPFloor) alone in a process, the third side of
// `load calls --reuse-instance`.
func newLoadHTTPFloorCmd() *cobra.Command {
	var label, tool, cacheDir string
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
			return floorChild(cmd, func(secret string) (string, func() error, error) {
				ctx := context.Background()
				srv, err := load.StartHTTPFloor(ctx, label, tool, roots, cacheDir, secret)
				if err != nil {
					return "", nil, err
				}
				return srv.URL, func() error { return srv.Close(ctx) }, nil
			}, nil)
		},
	}
	fs := c.Flags()
	fs.StringVar(&label, "baseline", "", "the baseline's `SOURCE`: a plugin folder or builtin:ID")
	fs.StringVar(&tool, "tool", "", "the `TOOL` to serve")
	fs.Var(roots, "root", "the baseline's roots: `NAME=DIR` (repeatable)")
	fs.StringVar(&cacheDir, "cache-dir", "", "a wazero compilation cache `DIR` to compile through")
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
			return floorChild(cmd, func(secret string) (string, func() error, error) {
				e, err := rtt.NewEcho(answerSize, func(h http.Handler) http.Handler { return load.SecretGuard(secret, h) })
				if err != nil {
					return "", nil, err
				}
				return e.URL(), func() error { e.Close(); return nil }, nil
			}, nil)
		},
	}
	c.Flags().IntVar(&answerSize, "answer-size", 0, "the size in `BYTES` of every answer")
	return c
}
