package broker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/mcp"
	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/broker/session"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins"
)

// BuildOptions are what a whole broker is assembled from.
type BuildOptions struct {
	Config  *config.Config
	Token   string // the launch token; empty leaves the broker inert
	Logger  *slog.Logger
	Metrics *metrics.Registry
	// Version is what MCP clients are told at initialize.
	Version string
}

// Broker is an assembled broker: the server and the parts it reloads and
// closes.
type Broker struct {
	Server  *Server
	Catalog *plugins.Catalog
	Router  *calls.Router
	// Sessions is the local browser broker (mint, bootstrap, /local/ws,
	// /local/view); the executor channel asks it ViewSession.
	Sessions *session.Service
	// Channel is the executor channel: /channel, the page executor and the
	// paired environments.
	Channel *channel.Channel
	local   *plugins.Executors
	// Receipts is the receipt log (audit.*); nil when audit.enabled is off.
	Receipts *receipts.Log
	logger   *slog.Logger
	metrics  *metrics.Registry
}

// Build assembles every part of the broker from its configuration: the
// executors and the plugin catalog (scanned and watched), the call router
// and its API, the session broker and the executor channel.
func Build(ctx context.Context, o BuildOptions) (*Broker, error) {
	cfg := o.Config
	o.Metrics = metrics.OrNew(o.Metrics) // one registry for every part, served at /metrics
	DeclareLocal(o.Metrics)
	storageKey, err := session.LoadStorageKey(cfg.Data)
	if err != nil {
		return nil, err
	}
	var log *receipts.Log
	if cfg.Audit.Enabled {
		log, err = receipts.Open(receipts.Options{Dir: cfg.AuditDir(), Fsync: cfg.Audit.Fsync,
			MaxFileBytes: int64(cfg.Audit.MaxFileBytes), Logger: o.Logger, Metrics: o.Metrics})
		if err != nil {
			return nil, err
		}
	}
	local, err := plugins.Open(ctx, cfg, o.Logger, o.Metrics, true)
	if err != nil {
		if log != nil {
			log.Close()
		}
		return nil, err
	}
	table, cat := local.Table, local.Catalog
	b := &Broker{Catalog: cat, local: local, logger: o.Logger, metrics: o.Metrics, Receipts: log}
	b.Router = calls.NewRouter(o.Metrics, o.Logger, calls.Local{Table: table})
	if log != nil {
		b.Router.Record(log, cfg.Audit.Fail == receipts.FailClosed)
		adm := &admissions{log: log, table: table}
		adm.sync()
		cat.OnChange(adm.sync)
	}
	components := []Component{calls.NewAPI(b.Router, o.Token, o.Metrics, func() any { return cat.Statuses() })}
	b.Sessions = session.New(session.Options{Local: cfg.Local, Token: httpx.NewToken(o.Token), Logger: o.Logger, Metrics: o.Metrics,
		StorageKey: storageKey, Receipts: log})
	components = append(components, b.Sessions)
	// The executor channel routes calls to the page and the paired
	// environments, after the local executors (see the routing rule).
	ch := channel.New(channel.Options{Config: cfg.Channel, Data: cfg.Data, Logger: o.Logger, Metrics: o.Metrics,
		ViewSession: b.Sessions.ViewSession, Local: calls.Local{Table: table}, Watch: true, Receipts: log})
	b.Router.AddSource(ch)
	b.Channel = ch
	components = append(components, ch)
	// /mcp serves the router to MCP clients (PROTOCOL section 11).
	srv := mcp.New(mcp.Options{Backend: mcp.Router(b.Router), Transport: "http", Version: o.Version, Logger: o.Logger, Metrics: o.Metrics})
	b.OnChange(srv.Changed)
	components = append(components, mcp.NewHTTP(mcp.HTTPOptions{Server: srv, Token: httpx.NewToken(o.Token),
		Port: func() int { return b.Server.Port() }, Config: cfg.MCP, Refused: b.refused}))
	b.Server = New(Options{Config: cfg, Logger: o.Logger, Metrics: o.Metrics, Components: components})
	// Every admitted descriptor has its series from the first scrape, and
	// loses them when it is retired or its peer's catalog drops it.
	b.OnChange(b.Router.SyncMetrics)
	b.Router.SyncMetrics()
	o.Metrics.SetBuildInfo(metrics.ReadBuildInfo(o.Version))
	return b, nil
}

func (b *Broker) refused(endpoint string, c contract.Code) {
	b.metrics.AuthRefused(endpoint, string(c))
}

// Reload re-reads the plugin values and rescans plugins and pairings
// (SIGHUP).
func (b *Broker) Reload(ctx context.Context) {
	b.local.Reload(ctx)
	if err := b.Channel.Reload(); err != nil {
		b.logger.Error("pairings reload failed", "err", err)
	}
}

// AdmittedCount is how many plugins are admitted now.
func (b *Broker) AdmittedCount() int {
	n := 0
	for _, s := range b.Catalog.Statuses() {
		if s.Admitted {
			n++
		}
	}
	return n
}

// Close drains and stops the broker within ctx: the server first (new
// calls refused, calls in flight finish), then the plugins and the runtime.
// When ctx ends each part forces what is left, the runtime last, so every
// resource is released before Close returns ctx's cause.
func (b *Broker) Close(ctx context.Context) error {
	err := errors.Join(b.Server.Shutdown(ctx), b.local.Close(ctx))
	if b.Receipts != nil {
		err = errors.Join(err, b.Receipts.Close())
	}
	return err
}

// OnChange registers fn to run whenever what the router lists may have
// changed: a plugin admitted or retired, a channel catalog accepted or
// forgotten, a page or an environment connecting or leaving. fn must
// return at once (it may run under the catalog's or the channel's lock).
func (b *Broker) OnChange(fn func()) {
	b.Catalog.OnChange(fn)
	b.Channel.OnChange(fn)
}
