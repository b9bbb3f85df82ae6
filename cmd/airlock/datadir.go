package main

import (
	"fmt"
	"io"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/plugins"
)

// checkData is every command's start-up check of --data (and, when the
// command compiles modules, of the compilation cache): a folder that is
// not the user's, that others may write, or that is reached through a
// link is refused with one line and exit 2, a configuration error. The
// exit code is -1 to go on.
func checkData(name string, cfg *config.Config, cache bool, stderr io.Writer) int {
	if err := plugins.CheckData(cfg, cache, newLogger(stderr, cfg.LogLevel)); err != nil {
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return exitUsage
	}
	return -1
}
