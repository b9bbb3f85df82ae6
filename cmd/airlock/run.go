// Command airlock is the loopback broker for editor extensions, browser
// views and sandboxed tools. See the README for the subcommands. Each
// subcommand's file parses its flags and calls a library; this one
// dispatches.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the command could not do its job
	exitUsage   = 2 // bad flags or config
	exitRefused = 3 // a refusal: `airlock call` and `run` answered one, `tools` and `build` found a plugin the catalog refuses
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "run the broker (what an extension launches)", runServe},
		{"demo", "run the broker on embedded defaults and make one read_notes call", runDemo},
		{"env", "run a paired environment that serves its tools to a broker", runEnv},
		{"pair", "manage pairings: pair add NAME | pair ls | pair rm NAME", runPair},
		{"tools", "list admitted and refused plugins", runTools},
		{"call", "call a tool: call TOOL --args JSON", runCall},
		{"new", "write a plugin project: new NAME", runNew},
		{"build", "compile a plugin project and check it as the broker would: build DIR", runBuild},
		{"run", "call a plugin project's tool once, offline: run DIR TOOL --args JSON", runRun},
		{"mcp", "serve the tools to an MCP client (Claude Desktop, VS Code, Cursor) on stdio", runMCP},
		{"mint", "mint a workspace session and print its view URL", runMint},
		{"load", "drive a running broker and compare with a same-run baseline: load calls | load relay", runLoad},
		{"version", "print the version", runVersion},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches to a subcommand; main is os.Exit(run(...)) so every
// command is testable in-process.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "airlock: unknown command %q (try airlock --help)\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: airlock COMMAND [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "airlock COMMAND --help shows a command's flags.")
}

// newFlags is a flag set that reports errors to stderr and never exits.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("airlock "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and maps the result to an exit code: -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	return -1
}

// rootsFlag collects repeatable --root NAME=DIR.
type rootsFlag map[string]string

func (r rootsFlag) String() string {
	var parts []string
	for k, v := range r {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (r rootsFlag) Set(v string) error {
	name, dir, ok := strings.Cut(v, "=")
	if !ok || name == "" || dir == "" {
		return errors.New("want NAME=DIR")
	}
	r[name] = dir
	return nil
}

// newLogger logs JSON to stderr at level.
func newLogger(stderr io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: l}))
}

// fail prints one line and returns exitFailed.
func fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "airlock: "+format+"\n", a...)
	return exitFailed
}

// environ is the process environment; a variable so tests can replace it.
var environ = os.Environ
