package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/devkit"
)

// runBuild is `airlock build DIR`: compile the project to its module,
// write the module's sha256 into plugin.json and check the plugin as the
// catalog would (plugins/devkit.Build).
func runBuild(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("build", stderr)
	command := fs.Bool("command", false, "build a command module (a fresh instance per call) instead of a reactor (pooled)")
	tinygo := fs.Bool("tinygo", false, "compile with tinygo (0.34 or newer, on PATH) for a smaller module")
	install := fs.String("install", "", "then copy the plugin into the plugins folder `DIR` (as DIR/<id>, atomically)")
	sf := addSettingsFlags(fs, "data")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock build DIR [--command] [--tinygo] [--install PLUGINS_DIR]")
		fmt.Fprintln(stderr, "exit 0 built and admissible, 1 the build failed, 2 usage, 3 the plugin would be refused")
		fs.PrintDefaults()
	}
	pos, code := parsePositional(fs, args, "build", stderr, "DIR")
	if code >= 0 {
		return code
	}
	cfg, code := loadCompiling(sf, "build", stderr)
	if code >= 0 {
		return code
	}
	o := devkit.BuildOptions{TinyGo: *tinygo, Env: environ(), Output: stderr, CacheDir: plugins.CacheDir(cfg)}
	if *command {
		o.Style = devkit.Command
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b, err := devkit.Build(ctx, pos[0], o)
	if err != nil {
		return devkitExit(stderr, "build", err)
	}
	var tools []string
	for _, t := range b.Manifest.Tools {
		tools = append(tools, t.Name)
	}
	fmt.Fprintf(stdout, "built %s (%s, %s, %d bytes), sha256 %s in plugin.json; admissible as %q with tools %s\n",
		b.Module, b.Style, b.Compiler, b.Size, b.Manifest.SHA256, b.Manifest.ID, strings.Join(tools, ", "))
	if *install != "" {
		if err := devkit.Install(b, *install); err != nil {
			return fail(stderr, "build: install: %v", err)
		}
		fmt.Fprintf(stdout, "installed into %s\n", *install)
	}
	return exitOK
}

// loadCompiling loads the settings of a command that compiles modules
// and checks its data directory and compilation cache as serve does; the
// exit code is -1 to go on.
func loadCompiling(sf *settingsFlags, name string, stderr io.Writer) (*config.Config, int) {
	cfg, err := sf.load()
	if err != nil {
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return nil, exitUsage
	}
	return cfg, checkData(name, cfg, true, stderr)
}

// devkitExit prints a devkit error on one line and maps it onto the exit
// codes: 2 usage, 3 the plugin would be refused, 1 anything else.
func devkitExit(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
	switch {
	case errors.Is(err, devkit.ErrUsage):
		return exitUsage
	case errors.Is(err, devkit.ErrRefused):
		return exitRefused
	}
	return exitFailed
}

// parsePositional parses flags that may come before, between or after the
// named positional arguments, which must all be given, and no more. The
// exit code is -1 to go on.
func parsePositional(fs *flag.FlagSet, args []string, name string, stderr io.Writer, names ...string) ([]string, int) {
	var pos []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	for {
		if code := parseFlags(fs, args); code >= 0 {
			return nil, code
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	switch {
	case len(pos) < len(names):
		missing, verb := names[len(pos):], "is"
		if len(missing) > 1 {
			verb = "are"
		}
		fmt.Fprintf(stderr, "airlock %s: %s %s missing (airlock %s --help)\n", name, strings.Join(missing, " and "), verb, name)
		return nil, exitUsage
	case len(pos) > len(names):
		fmt.Fprintf(stderr, "airlock %s: unexpected argument %q (airlock %s --help)\n", name, pos[len(names)], name)
		return nil, exitUsage
	}
	return pos, -1
}
