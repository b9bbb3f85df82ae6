package main

import (
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/channel/envclient"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins"
)

func init() { register(newEnvCmd) }

// newEnvCmd is `airlock env`: a paired environment serving its own
// plugins to a broker over /channel. It prints one JSON line on stdout
// per connection ({"event":"connected",…}) and per disconnection
// ({"event":"disconnected","code":N,"reason":…}); logs go to stderr.
func newEnvCmd() *cobra.Command {
	var sf *settingsFlags
	var bearerFile *secretFlag
	c := &cobra.Command{
		Use:   "env --broker ws://HOST:PORT/channel",
		Short: "run a paired environment that serves its tools to a broker",
		Long: "Serves the plugins of --plugins to a broker over its /channel, with the bearer that\n" +
			"`airlock pair add` printed on the broker's machine (AIRLOCK_BEARER or --bearer-file, never\n" +
			"an argument). It prints one JSON line on stdout per connection and per disconnection, and\n" +
			"reconnects with backoff when the broker goes away. It stops with exit 3 when the broker\n" +
			"refuses the bearer (mistyped, or its pairing removed) and the bearer has not changed since,\nand " +
			"with exit 1 when another environment took over the same pairing.\n\n" + settingsHelp(envSettings, secret.Bearer),
		// Not echoed: a stray argument may well be the bearer itself.
		Args: noArgs("the bearer is never a command-line value; use AIRLOCK_BEARER or --bearer-file"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := sf.load()
			if err != nil {
				return err
			}
			cfg.NoBuiltin = true // an environment serves its operator's tools only
			bearer, err := bearerFile.lookup()
			if err != nil {
				return err
			}
			if _, err := bearer(); err != nil { // fail fast on a missing or open file
				return bearerFile.err(err)
			}
			if err := checkChannelURL(cfg.Env.Broker); err != nil {
				return configErr(err)
			}
			if err := checkData(cfg, true, cmd.ErrOrStderr()); err != nil {
				return err
			}
			from := bearerFile.envNames(false)
			if bearerFile.file != "" {
				from = "--bearer-file " + bearerFile.file
			}
			return env(cfg, bearer, from, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	sf = addSettingsFlags(c.Flags(), "broker", "plugins", "trust-policy", "root", "data", "log-level")
	bearerFile = addSecretFlag(c.Flags(), secret.Bearer)
	return c
}

// env runs the environment until SIGTERM or SIGINT, re-reading plugin
// values and rescanning plugins on SIGHUP. A refused bearer that has not
// changed stops it with one ERROR line (bearerRefused) and exit 3: see
// broker/channel/RATIONALE.md, "Why does `airlock env` stop when its
// bearer is refused, unless the bearer changed?". from names where the
// bearer is read, for that line.
func env(cfg *config.Config, bearer func() (string, error), from string, stdout, stderr io.Writer) error {
	logger := configLogger(stderr, cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	local, err := plugins.Open(context.Background(), cfg, logger, metrics.New(), true)
	if err != nil {
		logger.Error("start failed", "err", err)
		return startFailed(err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.ShutdownGraceMs)*time.Millisecond)
		defer cancel()
		_ = local.Close(closeCtx)
	}()
	// An environment announces only what it can run now: a broker routes
	// calls to it as soon as its catalog arrives, and a module still
	// compiling would answer them exec-timeout. So it connects once its
	// modules are compiled (listing early is for serve and mcp, whose
	// callers wait); SIGTERM still stops it meanwhile.
	if err := local.Catalog.WaitCompiled(ctx); err != nil {
		logger.Info("stopped")
		return nil
	}
	cat := local.Catalog
	client, err := envclient.New(envclient.Options{
		URL: cfg.Env.Broker, Bearer: bearer, Executor: local.Table, Catalog: local.Table.Descriptors,
		BackoffMax: time.Duration(cfg.Env.BackoffMaxMs) * time.Millisecond, MaxInflight: cfg.Channel.MaxInflight,
		Logger: logger, Events: stdout,
	})
	if err != nil {
		logger.Error("start failed", "err", err)
		return exitSilently(exitFailed)
	}
	cat.OnChange(client.CatalogChanged)
	go reloadOnHUP(ctx, func() { local.Reload(ctx) })
	err = client.Run(ctx, time.Duration(cfg.ShutdownGraceMs)*time.Millisecond)
	switch {
	case errors.Is(err, envclient.ErrBearerRefused):
		logger.Error(bearerRefused, "fix", bearerFix(from))
		return exitSilently(exitRefused)
	case errors.Is(err, envclient.ErrReplaced):
		logger.Error("stopped", "err", err)
		return exitSilently(exitFailed)
	}
	logger.Info("stopped")
	return nil
}

// reloadOnHUP runs reload on every SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, reload func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload()
		}
	}
}

// checkChannelURL accepts ws:// or wss:// URLs with a host.
func checkChannelURL(raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return errors.New("--broker must be the broker's channel URL, such as ws://127.0.0.1:7420/channel")
	}
	return nil
}

// bearerRefused is the one line `airlock env` stops with when the broker
// closed it 1008 bearer-refused: the broker does not say whether the
// bearer was mistyped or its pairing removed, so the line says what
// happened and bearerFix what to do in either case.
const bearerRefused = "stopped: the broker refused the bearer (1008 bearer-refused)"

// bearerFix is what to do about a refused bearer read from from.
func bearerFix(from string) string {
	return "check that " + from + " holds the bearer `airlock pair add NAME` printed on the broker's machine; " +
		"if that pairing was removed, pair again there and give the new bearer the same way"
}
