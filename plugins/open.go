package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins/bundled"
	"github.com/airlock/airlock/plugins/signing"
)

// Executors are one command's local tools: the wazero runtime, the table
// of admitted programs and the catalog that fills it. `airlock serve`,
// `airlock env` and `airlock tools` all admit tools through Open.
type Executors struct {
	Runtime *executors.Runtime
	Table   *executors.Table
	Catalog *Catalog
	cfg     *config.Config
	logger  *slog.Logger
}

// Open checks the data directory, builds the runtime and a catalog of the
// plugins folder (and of the bundled plugins unless cfg.NoBuiltin), scans
// it once and then, when watch is set, watches it. The catalog compiles
// in the background (Options.Background): Open returns with the tools
// listed, their modules still compiling; Catalog.WaitCompiled waits for
// them. reg may be nil
// (offline). Nothing is left running when it fails.
func Open(ctx context.Context, cfg *config.Config, logger *slog.Logger, reg *metrics.Registry, watch bool) (*Executors, error) {
	if err := CheckData(cfg, false, logger); err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	trust, err := TrustPolicy(cfg)
	if err != nil {
		return nil, err
	}
	rt, err := executors.NewRuntime(ctx, RuntimeConfig(cfg, logger))
	if err != nil {
		return nil, fmt.Errorf("plugins: executors: %w", err)
	}
	var builtin fs.FS
	if !cfg.NoBuiltin {
		builtin = bundled.Plugins()
	}
	e := &Executors{Runtime: rt, Table: executors.NewTable(), cfg: cfg, logger: logger}
	e.Catalog, err = New(Options{Runtime: rt, Table: e.Table, Dir: cfg.Plugins, Builtin: builtin, Logger: logger, Metrics: reg, Trust: trust,
		Background: true})
	if err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	e.Catalog.Scan(ctx)
	if !watch {
		return e, nil
	}
	if err := e.Catalog.Watch(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// Reload is SIGHUP's work for the local tools: it re-reads the plugin
// values (the config's ReadPluginConfig; on an error, logged with its path and
// never a value, the values read before stay) and rescans the plugins.
// Calls that start afterwards read the new values; no plugin is
// re-admitted for a value's sake.
func (e *Executors) Reload(ctx context.Context) {
	if v, err := e.cfg.ReadPluginConfig(); err != nil {
		e.logger.Error("plugin config not reloaded; the values read before stay", "err", err)
	} else {
		e.Runtime.SetPluginConfig(v)
		e.logger.Info("plugin config reloaded", "plugins", len(v.Plugins()))
	}
	if trust, err := TrustPolicy(e.cfg); err != nil {
		e.logger.Error("trust policy not reloaded; the policy read before stays", "err", err)
	} else {
		e.Catalog.SetTrust(trust)
		e.logger.Info("trust policy reloaded", "file", trustFile(trust))
	}
	e.Catalog.Scan(ctx)
	e.Catalog.CheckConfig()
}

// TrustPolicy reads the trust policy of cfg: the file plugin_trust_policy
// names (which must exist), else DATA/trust-policy.json when it exists,
// else none (nil). A policy that cannot be used is an error naming the
// file, the place and the fix (signing.ErrPolicy).
func TrustPolicy(cfg *config.Config) (*signing.Policy, error) {
	if cfg.PluginTrustPolicy != "" {
		return signing.ReadPolicy(cfg.PluginTrustPolicy, false)
	}
	return signing.ReadPolicy(filepath.Join(cfg.Data, signing.PolicyName), true)
}

// trustFile names a policy in the log ("" for none).
func trustFile(p *signing.Policy) string {
	if p == nil {
		return ""
	}
	return p.File()
}

// RuntimeConfig is the executors' configuration from the broker's: the
// compilation cache in the data directory, the roots, the exec limits and
// the operator's plugin values.
func RuntimeConfig(cfg *config.Config, logger *slog.Logger) executors.Config {
	return executors.Config{
		CacheDir:       CacheDir(cfg),
		Roots:          cfg.Roots,
		MaxConcurrent:  cfg.Exec.MaxConcurrent,
		MaxFetchBytes:  cfg.Exec.MaxFetchBytes,
		MaxStderrBytes: cfg.Exec.MaxStderrBytes,
		PoolSize:       cfg.Exec.PoolSize,
		PluginConfig:   cfg.PluginConfig,
		Logger:         logger,
	}
}

// Close stops the catalog (its watcher, and the programs it admitted) and
// then the runtime, within ctx.
func (e *Executors) Close(ctx context.Context) error {
	return errors.Join(e.Catalog.Close(ctx), e.Runtime.Close(ctx))
}
