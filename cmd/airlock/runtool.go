package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/devkit"
)

// runRun is `airlock run DIR TOOL --args JSON`: one call of a built
// project's tool, offline, under its bounds, through the executors as a
// broker makes it (plugins/devkit.Run). It prints the answer envelope and
// exits 0 when ok, 3 when refused (the call, or the plugin's admission).
// Roots, exec limits and the compilation cache come from the same flags,
// config file and environment as `airlock serve`'s.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	argsJSON := fs.String("args", "{}", "the tool's arguments as a JSON `OBJECT`")
	sf := addSettingsFlags(fs, "root", "data", "log-level")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock run DIR TOOL [--args JSON] [--root NAME=DIR]... [--config FILE] [--data DIR]")
		fmt.Fprintln(stderr, "prints the answer envelope; exit 0 when ok, 3 when refused, 2 usage, 1 when the call could not be made")
		fs.PrintDefaults()
	}
	pos, code := parsePositional(fs, args, "run", stderr, "DIR", "TOOL")
	if code >= 0 {
		return code
	}
	callArgs, err := wire.CompactMember([]byte(*argsJSON))
	if err != nil {
		fmt.Fprintln(stderr, "airlock run: --args must be one JSON object")
		return exitUsage
	}
	cfg, code := loadCompiling(sf, "run", stderr)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rc := plugins.RuntimeConfig(cfg, newLogger(stderr, cfg.LogLevel))
	a, err := devkit.Run(ctx, pos[0], pos[1], callArgs, devkit.RunOptions{Runtime: rc})
	if err != nil {
		return devkitExit(stderr, "run", err)
	}
	raw, _ := json.Marshal(a)
	out, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
	fmt.Fprintf(stdout, "%s\n", out)
	if !a.OK {
		return exitRefused
	}
	return exitOK
}
