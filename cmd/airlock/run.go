// Command airlock is the loopback broker for editor extensions, browser
// views and sandboxed tools. See README.md beside this file for the subcommands.
//
// The command line is github.com/spf13/cobra (see RATIONALE.md, "Why
// cobra for the command line, and not kong or the flag package?"): help
// on stdout, `airlock help CMD`, `--version`, shell completion, and one
// exit-code table (exit.go). main is os.Exit(run(...)), so every command
// runs in-process too.
//
// # Adding a subcommand
//
// A subcommand is one file, thin over a package that does the work. The
// file registers a constructor, and nothing else in the command changes:
//
//	func init() { register(newGreetCmd) }
//
//	func newGreetCmd() *cobra.Command {
//		var loud bool
//		c := &cobra.Command{
//			Use:   "greet NAME",
//			Short: "one line for `airlock --help`",
//			Long:  "what it does, for `airlock help greet`",
//			Args:  exactArgs("NAME"),
//			RunE: func(cmd *cobra.Command, args []string) error {
//				out, err := greeter.Greet(args[0], loud)
//				if err != nil {
//					return err // exit 1, one line "airlock greet: …"
//				}
//				fmt.Fprintln(cmd.OutOrStdout(), out)
//				return nil
//			},
//		}
//		c.Flags().BoolVar(&loud, "loud", false, "shout")
//		return c
//	}
//
// Write results to cmd.OutOrStdout() and logs to cmd.ErrOrStderr().
// Return nil (exit 0), a plain error (exit 1), or one of exit.go's:
// usageErr and configErr (exit 2), brokerErr (3 for a refused launch
// token), exitSilently(code) when the output already said why (a refused
// call's answer, a log line). A bad flag is a usage error by itself. Use the
// shared flag sets where they apply: addBrokerFlags for --broker and
// --token-file (every command that talks to a running broker),
// addSettingsFlags for the broker's settings (its load checks their
// paths), readArgs for a JSON --args, checkPath (or checkTarget, for a
// folder the command makes) for any other path it is given, and a
// --json flag wherever the output is a table.
package main

import (
	"github.com/airlock/airlock/config"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs one command line and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	return report(cmd, err, stderr)
}

// registered are the subcommands' constructors, in the order of their
// files; see the package comment.
var registered []func() *cobra.Command

// register adds a subcommand; call it from the subcommand file's init.
func register(newCmd func() *cobra.Command) { registered = append(registered, newCmd) }

// newRoot is the whole command tree, built afresh for every run.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "airlock",
		Short: "the loopback broker for editor extensions, browser views and sandboxed tools",
		Long: "Airlock is the loopback broker an editor extension launches: it mints workspace\n" +
			"sessions, relays their state to browser views, and runs sandboxed tools.\n\n" +
			"airlock help COMMAND (or airlock COMMAND --help) shows a command's flags.\n\n" + exitCodesHelp(),
		Version:       buildInfoOf().Version,
		SilenceErrors: true, // report prints one line
		SilenceUsage:  true, // a usage error is one line, not the usage
	}
	groupCommand(root)
	root.SetVersionTemplate(buildInfoOf().text())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	for _, newCmd := range registered {
		root.AddCommand(newCmd())
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Run, c.RunE = nil, help
		case "completion":
			groupCommand(c)
		}
	}
	runFailures(root)
	return root
}

// groupCommand makes c, a command whose work is done by its subcommands
// (airlock, pair, load, completion), refuse a missing or unknown
// subcommand in one line with exit 2; cobra would print the help and
// exit 0. Unknown flags are left to that message, which is the more
// useful one: `pair show --data D` is wrong about `show`.
func groupCommand(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.FParseErrWhitelist.UnknownFlags = true
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		list := strings.Join(names, ", ")
		if len(args) == 0 {
			return usageErr("missing command: %s (%s --help says more)", list, cmd.CommandPath())
		}
		if s := suggest(cmd, args[0]); len(s) > 0 && args[0] != "" {
			return usageErr("unknown command %q; did you mean %s?", args[0], strings.Join(s, " or "))
		}
		return usageErr("unknown command %q: want %s", args[0], list)
	}
}

// suggest is cobra's suggestions for a mistyped command, those that start
// with the same letter first: "ad" suggests add, not ls and rm.
func suggest(cmd *cobra.Command, typed string) []string {
	all := cmd.SuggestionsFor(typed)
	var same []string
	for _, s := range all {
		if typed != "" && s[0] == typed[0] {
			same = append(same, s)
		}
	}
	if len(same) > 0 {
		return same
	}
	return all
}

// help is `airlock help [COMMAND]...`: the command's help on stdout, exit
// 0; an unknown topic is a usage error.
func help(cmd *cobra.Command, args []string) error {
	target, rest, err := cmd.Root().Find(args)
	if err != nil || len(rest) > 0 {
		return usageErr("no command %q (airlock --help lists them)", strings.Join(args, " "))
	}
	return target.Help()
}

// exactArgs accepts exactly the named positional arguments, and says in
// one line which are missing or how many are too many. Extra arguments
// are not echoed: a stray one may be a secret a launcher put there.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usageErr("missing %s", strings.Join(names[len(args):], " "))
		case len(args) > len(names):
			if len(names) == 0 {
				return usageErr("unexpected argument (this command takes none)")
			}
			return usageErr("%d arguments, want %s", len(args), strings.Join(names, " "))
		}
		return nil
	}
}

// noArgs refuses positional arguments with hint, without echoing them:
// a launcher that passed a secret positionally must not see it printed
// back into its logs.
func noArgs(hint string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr("unexpected argument (%s)", hint)
		}
		return nil
	}
}

// newLogger logs JSON to stderr at level.
func newLogger(stderr io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: l}))
}

// configLogger is newLogger at cfg's level, having logged what loading
// cfg found worth a warning (an AIRLOCK_* variable that is no setting):
// the first lines a long-running command writes.
func configLogger(stderr io.Writer, cfg *config.Config) *slog.Logger {
	l := newLogger(stderr, cfg.LogLevel)
	for _, w := range cfg.Warnings {
		l.Warn(w)
	}
	return l
}

// environ is the process environment; a variable so tests can replace it.
var environ = os.Environ
