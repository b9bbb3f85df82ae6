package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock/airlock/broker/channel/envclient"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins"
)

// runEnv is `airlock env`: a paired environment serving its own plugins
// to a broker over /channel. It prints one JSON line on stdout per
// connection ({"event":"connected",…}) and per disconnection
// ({"event":"disconnected","code":N,"reason":…}); logs go to stderr.
func runEnv(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("env", stderr)
	sf := addSettingsFlags(fs, "broker", "plugins", "root", "data", "log-level")
	bearerFile := addSecretFlag(fs, secret.Bearer)
	fs.Usage = settingsUsage(fs, stderr, "airlock env --broker ws://HOST:PORT/channel [--bearer-file FILE] [--plugins DIR] [--root NAME=DIR]")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		// Not echoed: a stray argument may well be the bearer itself.
		fmt.Fprintln(stderr, "airlock env: unexpected argument (the bearer is never a command-line value; use AIRLOCK_BEARER or --bearer-file)")
		return exitUsage
	}
	cfg, err := sf.load()
	if err != nil {
		fmt.Fprintf(stderr, "airlock env: %v\n", err)
		return exitUsage
	}
	cfg.NoBuiltin = true // an environment serves its operator's tools only
	bearer, err := bearerFile.lookup()
	if err == nil {
		_, err = bearer() // fail fast on a missing or open file
	}
	if err != nil {
		fmt.Fprintf(stderr, "airlock env: bearer: %v\n", err)
		return exitUsage
	}
	if err := checkChannelURL(cfg.Env.Broker); err != nil {
		fmt.Fprintf(stderr, "airlock env: %v\n", err)
		return exitUsage
	}
	if code := checkData("env", cfg, true, stderr); code >= 0 {
		return code
	}
	return env(cfg, bearer, stdout, stderr)
}

// env runs the environment until SIGTERM or SIGINT, re-reading plugin
// values and rescanning plugins on SIGHUP.
func env(cfg *config.Config, bearer func() (string, error), stdout, stderr io.Writer) int {
	logger := newLogger(stderr, cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	local, err := plugins.Open(context.Background(), cfg, logger, metrics.New(), true)
	if err != nil {
		logger.Error("start failed", "err", err)
		return exitFailed
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.ShutdownGraceMs)*time.Millisecond)
		defer cancel()
		_ = local.Close(closeCtx)
	}()
	cat := local.Catalog
	client, err := envclient.New(envclient.Options{
		URL: cfg.Env.Broker, Bearer: bearer, Executor: local.Table, Catalog: local.Table.Descriptors,
		BackoffMax: time.Duration(cfg.Env.BackoffMaxMs) * time.Millisecond, MaxInflight: cfg.Channel.MaxInflight,
		Logger: logger, Events: stdout,
	})
	if err != nil {
		logger.Error("start failed", "err", err)
		return exitFailed
	}
	cat.OnChange(client.CatalogChanged)
	go reloadOnHUP(ctx, func() { local.Reload(ctx) })
	err = client.Run(ctx, time.Duration(cfg.ShutdownGraceMs)*time.Millisecond)
	if errors.Is(err, envclient.ErrReplaced) {
		logger.Error("stopped", "err", err)
		return exitFailed
	}
	logger.Info("stopped")
	return exitOK
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
