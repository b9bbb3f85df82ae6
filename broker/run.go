package broker

import (
	"context"
	"os"
	"time"
)

// RunOptions are what Run needs besides the parts of the broker.
type RunOptions struct {
	BuildOptions
	// Reload asks for a rescan of plugins and pairings each time a value
	// arrives (SIGHUP in `airlock serve`); nil for never.
	Reload <-chan os.Signal
	// Listening, when not nil, is called with the bound address once the
	// broker listens and before it serves.
	Listening func(addr string)
}

// Run assembles a broker, listens, and serves until ctx ends, then drains
// within the configured shutdown grace. It returns an error, already
// logged, when the broker could not start or stopped serving by itself.
func Run(ctx context.Context, o RunOptions) error {
	logger := o.Logger
	b, err := Build(ctx, o.BuildOptions)
	if err != nil {
		logger.Error("start failed", "err", err)
		return err
	}
	ln, mln, err := b.Server.Listen()
	if err != nil {
		logger.Error("start failed", "err", err)
		_ = b.Close(context.Background())
		return err
	}
	addr := ln.Addr().String()
	if o.Listening != nil {
		o.Listening(addr)
	}
	logger.Info("listening", "addr", addr, "inert", o.Token == "", "plugins", b.AdmittedCount())
	if mln != nil {
		logger.Info("metrics listening", "addr", mln.Addr().String())
	}

	served := make(chan error, 1)
	go func() { served <- b.Server.Serve(ln, mln) }()
	for {
		select {
		case <-o.Reload:
			logger.Info("reload requested")
			b.Reload(ctx)
			continue
		case err := <-served:
			if err != nil {
				logger.Error("serve failed", "err", err)
			}
			return err
		case <-ctx.Done():
		}
		break
	}
	logger.Info("draining", "grace_ms", o.Config.ShutdownGraceMs)
	grace, cancel := context.WithTimeout(context.Background(), time.Duration(o.Config.ShutdownGraceMs)*time.Millisecond)
	defer cancel()
	err = b.Close(grace)
	<-served
	if err != nil {
		logger.Warn("drain ended early", "err", err)
	}
	logger.Info("stopped")
	return nil
}
