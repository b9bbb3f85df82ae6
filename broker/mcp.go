package broker

import (
	"context"
	"io"
	"time"

	"github.com/airlock/airlock/broker/mcp"
	"github.com/airlock/airlock/broker/v1client"
)

// MCPOptions are what `airlock mcp` runs on.
type MCPOptions struct {
	// BuildOptions assemble the embedded broker when Remote is nil; it
	// never listens: its router is the MCP server's backend.
	BuildOptions
	// Remote, when set, is a running broker whose catalog is served
	// instead (`airlock mcp --broker URL`).
	Remote *v1client.Client
	// In and Out carry the MCP messages (stdin and stdout); nothing else
	// is written to Out.
	In  io.Reader
	Out io.Writer
}

// remotePoll is how often a remote broker's catalog is listed again: its
// /v1 API does not say when the catalog changes.
const remotePoll = 2 * time.Second

// RunMCP serves one MCP session over In and Out until the client closes
// In or ctx ends, then stops the embedded broker within the configured
// shutdown grace. It returns an error, already logged, when the broker
// could not start.
func RunMCP(ctx context.Context, o MCPOptions) error {
	logger := o.Logger
	mo := mcp.Options{Transport: "stdio", Version: o.Version, Logger: logger, Metrics: o.Metrics}
	var b *Broker
	if o.Remote != nil {
		mo.Backend, mo.Poll = mcp.Remote(o.Remote), remotePoll
	} else {
		var err error
		if b, err = Build(ctx, o.BuildOptions); err != nil {
			logger.Error("start failed", "err", err)
			return err
		}
		mo.Backend, mo.Metrics = mcp.Router(b.Router), b.metrics
	}
	srv := mcp.New(mo)
	if b != nil {
		b.OnChange(srv.Changed)
		logger.Info("mcp: serving on stdio", "plugins", b.AdmittedCount())
	} else {
		logger.Info("mcp: serving on stdio", "broker", o.Remote.Base)
	}
	err := srv.Run(ctx, srv.Stdio(o.In, o.Out))
	srv.Close()
	if err != nil {
		logger.Warn("mcp: session ended", "err", err)
	}
	if b != nil {
		grace, cancel := context.WithTimeout(context.Background(), time.Duration(o.Config.ShutdownGraceMs)*time.Millisecond)
		defer cancel()
		if cerr := b.Close(grace); cerr != nil {
			logger.Warn("drain ended early", "err", cerr)
		}
	}
	logger.Info("stopped")
	return nil
}
