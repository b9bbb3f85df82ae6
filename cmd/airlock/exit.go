package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"

	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/signing"
)

// The exit codes of every command: this table is the one place they are
// decided, `airlock --help` prints it, and README.md's "Exit codes"
// section documents it (a test holds the two together). See
// RATIONALE.md, "Why one exit-code table, and why is a refused credential
// exit 3?".
const (
	exitOK      = exitcode.OK
	exitFailed  = exitcode.Failed
	exitUsage   = exitcode.Usage
	exitRefused = exitcode.Refused
)

// exitCodes describes each code for the help and README.md.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "ok: the command did its job"},
	{exitFailed, "failure: it could not (the broker unreachable, a tool not found, a file not written)"},
	{exitUsage, "usage or config: bad flags or arguments, bad configuration, a missing or unusable path or secret, an unsafe --data folder"},
	{exitRefused, "refused: a call answered refused, a plugin refused admission, or the broker refused the launch token or the bearer"},
}

// exitCodesHelp is the table as the root command's help prints it.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", c.code, c.meaning)
	}
	return b.String()
}

// exitError ends a command with a code and, unless msg is empty (the
// command already said why, as a log line), one line on stderr.
type exitError struct {
	code int
	msg  string
	err  error // what it wraps, if anything
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a bad flag, argument or configuration (exit 2).
func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

// configErr is a configuration or secret that cannot be used (exit 2).
func configErr(err error) error { return &exitError{code: exitUsage, msg: err.Error(), err: err} }

// exitSilently ends with code; the command has already said why.
func exitSilently(code int) error { return &exitError{code: code} }

// startFailed is how a command ends when the broker or the environment
// could not start (the reason is already logged): exit 2 when the reason
// is a setting (a --plugins folder removed after checkSettingPaths found
// it), 1 otherwise.
func startFailed(err error) error {
	if errors.Is(err, plugins.ErrNoPluginsDir) || errors.Is(err, signing.ErrPolicy) {
		return exitSilently(exitUsage)
	}
	return exitSilently(exitFailed)
}

// runFailures makes every error a command's RunE returns without a code
// a failure (exit 1). Errors that reach report without a code are then
// cobra's own (an unknown command, a bad argument count), all usage
// errors. It walks the tree once, after every command is added, so a
// subcommand's file needs to know nothing of it.
func runFailures(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := run(cmd, args)
			var e *exitError
			if err != nil && !errors.As(err, &e) {
				return &exitError{code: exitFailed, msg: err.Error(), err: err}
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		runFailures(sub)
	}
}

// report prints err as one line naming the command, and returns the exit
// code.
func report(cmd *cobra.Command, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if !errors.As(err, &e) {
		e = &exitError{code: exitUsage, msg: err.Error()}
	}
	if e.msg != "" {
		name := "airlock"
		if cmd != nil {
			name = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, strings.Join(strings.Fields(e.msg), " "))
	}
	return e.code
}
