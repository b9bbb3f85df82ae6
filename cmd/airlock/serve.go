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

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/metrics"
)

func init() { register(newServeCmd) }

// newServeCmd is `airlock serve`, what an extension launches (PROTOCOL
// section 9).
func newServeCmd() *cobra.Command {
	var sf *settingsFlags
	var prof *profileFlag
	c := &cobra.Command{
		Use:   "serve",
		Short: "run the broker (what an extension launches)",
		Long: "Runs the broker. The first stdout line is {\"event\":\"listening\",\"addr\":\"127.0.0.1:PORT\",\"pid\":N};\n" +
			"logs are JSON on stderr. SIGTERM drains and exits 0; SIGHUP rescans plugins and pairings.\n" +
			"Without a launch token the broker is inert: it serves /healthz and /metrics only.\n" +
			"--standalone (AIRLOCK_STANDALONE) is the standalone plugin service: it binds 127.0.0.1 only (any other\n" +
			"--listen or --metrics-listen exits 2, even with a token), needs the launch token (exit 2 without one)\n" +
			"and serves no source proposals (local.source_proposals is off; turning it on exits 2).\n\n" + settingsHelp(serveSettings, secret.LaunchToken),
		// The argument is not echoed: a launcher that passed the token
		// positionally must not see it printed back into its logs.
		Args: noArgs("the launch token is never an argument; use AIRLOCK_LOCAL_TOKEN or --token-file"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := sf.load()
			if err != nil {
				return err
			}
			token, err := sf.token.read()
			if errors.Is(err, secret.ErrMissing) {
				token, err = "", nil // no token: an inert broker
			}
			if err != nil {
				return err
			}
			if err := broker.CheckToken(token); err != nil {
				return configErr(err)
			}
			if err := broker.CheckBind(cfg, token != ""); err != nil {
				return configErr(err)
			}
			if err := checkData(cfg, true, cmd.ErrOrStderr()); err != nil {
				return err
			}
			logger := configLogger(cmd.ErrOrStderr(), cfg)
			stopProfile, err := prof.start()
			if err != nil {
				return err
			}
			defer stopProfile()
			return serve(cfg, token, logger, cmd.OutOrStdout(), nil)
		},
	}
	sf = addSettingsFlags(c.Flags(), "listen", "metrics-listen", "listen-unix", "data", "plugins", "trust-policy", "root", "no-builtin", "standalone", "log-level", "token-file")
	prof = addProfileFlag(c.Flags())
	return c
}

// serve runs a broker until SIGTERM or SIGINT, reloading on SIGHUP, and
// prints {"event":"listening","addr":…,"pid":…} once it listens (with
// "socket": PATH when it listens on a Unix socket too). When
// ready is not nil it is called with the bound address then (demo uses it
// to make its first call).
func serve(cfg *config.Config, token string, logger *slog.Logger, stdout io.Writer, ready func(addr string)) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP is caught before the listening line is printed: a launcher may
	// send it as soon as it reads that line, and its default action kills.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	listening := func(addr string) {
		event := map[string]any{"event": "listening", "addr": addr, "pid": os.Getpid()}
		if cfg.ListenUnix != "" {
			event["socket"] = cfg.ListenUnix
		}
		line, _ := json.Marshal(event)
		fmt.Fprintf(stdout, "%s\n", line)
		if ready != nil {
			go ready(addr)
		}
	}
	err := broker.Run(ctx, broker.RunOptions{Reload: hup, Listening: listening,
		BuildOptions: broker.BuildOptions{Config: cfg, Token: token, Logger: logger, Metrics: metrics.New(), Version: buildInfoOf().Version}})
	if err != nil {
		return startFailed(err) // broker.Run logged why
	}
	return nil
}
