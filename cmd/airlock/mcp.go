package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/metrics"
)

// runMCP is `airlock mcp`: an MCP server on stdin and stdout (PROTOCOL
// sections 9 and 11). Without --broker it runs an embedded broker on
// serve's defaults (the bundled tools, --plugins, --root, --data) that
// never listens; with --broker it serves that broker's tools. stdout
// carries MCP messages and nothing else; logs go to stderr.
func runMCP(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mcp", stderr)
	sf := addSettingsFlags(fs, "data", "plugins", "root", "no-builtin", "log-level", "token-file")
	brokerURL := fs.String("broker", "", "serve the tools of a running broker at `URL` (http://127.0.0.1:7420; token from TENSORVIZ_LOCAL_TOKEN or --token-file)")
	fs.Usage = settingsUsage(fs, stderr, "airlock mcp [--root NAME=DIR]... [--plugins DIR] | airlock mcp --broker URL [--token-file FILE]")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "airlock mcp: unexpected argument (the launch token is never an argument; use TENSORVIZ_LOCAL_TOKEN or --token-file)")
		return exitUsage
	}
	cfg, err := sf.load()
	if err != nil {
		fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
		return exitUsage
	}
	o := broker.MCPOptions{In: os.Stdin, Out: stdout,
		BuildOptions: broker.BuildOptions{Config: cfg, Logger: newLogger(stderr, cfg.LogLevel), Metrics: metrics.New(), Version: version}}
	if *brokerURL != "" {
		if o.Remote, err = newV1Client(*brokerURL, sf.token); err != nil {
			fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
			return exitUsage
		}
	} else if code := checkData("mcp", cfg, true, stderr); code >= 0 {
		return code
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
		return exitFailed
	}
	return exitOK
}
