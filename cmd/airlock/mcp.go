package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/broker/mcp"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/metrics"
)

func init() { register(newMCPCmd) }

// newMCPCmd is `airlock mcp`: an MCP server on stdin and stdout (PROTOCOL
// sections 9 and 11). Without --broker it runs an embedded broker on
// serve's defaults (the bundled tools, --plugins, --root, --data) that
// never listens; with --broker it serves that broker's tools. stdout
// carries MCP messages and nothing else; logs go to stderr.
func newMCPCmd() *cobra.Command {
	var sf *settingsFlags
	var b *brokerFlags
	c := &cobra.Command{
		Use:   "mcp [--broker URL]",
		Short: "serve the tools to an MCP client (Claude Desktop, VS Code, Cursor) on stdio",
		Long: "An MCP server on stdin and stdout. Without --broker it runs an embedded broker on serve's\n" +
			"defaults (the bundled tools, --plugins, --root, --data) that never listens; with --broker\n" +
			"it serves that broker's tools. stdout carries MCP messages only; logs go to stderr.\n\n" + settingsHelp(mcpSettings, secret.LaunchToken),
		Args: noArgs("the launch token is never an argument; use AIRLOCK_LOCAL_TOKEN or --token-file"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := sf.load()
			if err != nil {
				return err
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			o := broker.MCPOptions{In: cmd.InOrStdin(), Out: stdout,
				BuildOptions: broker.BuildOptions{Config: cfg, Logger: configLogger(stderr, cfg), Metrics: metrics.New(), Version: buildInfoOf().Version}}
			if b.given() {
				if o.Remote, err = b.client(); err != nil {
					return err
				}
				if err := mcp.CheckRemote(cmd.Context(), o.Remote); err != nil {
					return brokerErr(err)
				}
			} else if err := checkData(cfg, true, stderr); err != nil {
				return err
			}
			if f, ok := stdout.(*os.File); ok && f == os.Stdout {
				// Only the transport writes to stdout: a stray print anywhere
				// else would corrupt the MCP stream, so it goes to stderr.
				os.Stdout = os.Stderr
				defer func() { os.Stdout = f }()
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := broker.RunMCP(ctx, o); err != nil {
				return startFailed(err) // RunMCP logged why
			}
			return nil
		},
	}
	sf = addSettingsFlags(c.Flags(), "data", "plugins", "trust-policy", "root", "no-builtin", "log-level")
	b = addBrokerFlags(c.Flags(), "without it, an embedded broker")
	return c
}
