package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/metrics"
)

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", stderr)
	sf := addSettingsFlags(fs, "listen", "metrics-listen", "data", "plugins", "root", "no-builtin", "log-level", "token-file")
	fs.Usage = settingsUsage(fs, stderr, "airlock serve [flags]")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		// The argument is not echoed: a launcher that passed the token
		// positionally must not see it printed back into its logs.
		fmt.Fprintln(stderr, "airlock serve: unexpected argument (the launch token is never an argument; use TENSORVIZ_LOCAL_TOKEN or --token-file)")
		return exitUsage
	}
	cfg, err := sf.load()
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return exitUsage
	}
	token, err := sf.token.read()
	if errors.Is(err, secret.ErrMissing) {
		token, err = "", nil // no token: an inert broker
	}
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: launch token: %v\n", err)
		return exitUsage
	}
	if err := broker.CheckToken(token); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return exitUsage
	}
	if err := broker.CheckBind(cfg, token != ""); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return exitUsage
	}
	if code := checkData("serve", cfg, true, stderr); code >= 0 {
		return code
	}
	logger := newLogger(stderr, cfg.LogLevel)
	return serve(cfg, token, logger, stdout, nil)
}

// serve runs a broker until SIGTERM or SIGINT, reloading on SIGHUP, and
// prints {"event":"listening","addr":…,"pid":…} once it listens. When
// ready is not nil it is called with the bound address then (demo uses it
// to make its first call).
func serve(cfg *config.Config, token string, logger *slog.Logger, stdout io.Writer, ready func(addr string)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP is caught before the listening line is printed: a launcher may
	// send it as soon as it reads that line, and its default action kills.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	listening := func(addr string) {
		line, _ := json.Marshal(map[string]any{"event": "listening", "addr": addr, "pid": os.Getpid()})
		fmt.Fprintf(stdout, "%s\n", line)
		if ready != nil {
			go ready(addr)
		}
	}
	err := broker.Run(ctx, broker.RunOptions{Reload: hup, Listening: listening,
		BuildOptions: broker.BuildOptions{Config: cfg, Token: token, Logger: logger, Metrics: metrics.New(), Version: version}})
	if err != nil {
		return exitFailed
	}
	return exitOK
}
