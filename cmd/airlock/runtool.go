package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins/devkit"
)

// runRun is `airlock run DIR TOOL --args JSON`: one call of a built
// project's tool, offline, under its bounds, through the executors as a
// broker makes it (plugins/devkit.Run). It prints the answer envelope and
// exits 0 when ok, 3 when refused (the call, or the plugin's admission).
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	argsJSON := fs.String("args", "{}", "the tool's arguments as a JSON `OBJECT`")
	roots := rootsFlag{}
	fs.Var(roots, "root", "map a root: `NAME=DIR` (repeatable), mounted read-only")
	level := fs.String("log-level", "info", "the tool's log lines and stderr on stderr at `LEVEL` (debug, info, warn, error)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock run DIR TOOL [--args JSON] [--root NAME=DIR]...")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	a, err := devkit.Run(ctx, pos[0], pos[1], callArgs, devkit.RunOptions{Roots: roots, Logger: newLogger(stderr, *level)})
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
