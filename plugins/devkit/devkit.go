// Package devkit is the tool author's side of plugins: New writes a plugin
// project that builds outside this repository, Build compiles it to a
// WASI module and checks it exactly as the catalog admits plugins, and Run
// calls one of its tools once, offline, under its bounds. `airlock new`,
// `airlock build` and `airlock run` are thin commands over it; the walk
// through them is plugins/README.md.
package devkit

import (
	"errors"
	"fmt"
)

// Kinds of error, matched with errors.Is. Each maps onto one exit code of
// the command line (PROTOCOL section 9): ErrUsage 2, ErrRefused 3, any
// other error 1 (the job could not be done: a compile error, a missing
// compiler, a file that could not be written).
var (
	// ErrUsage: a bad name, a target folder that is not empty, a folder
	// that is not a plugin project, bad arguments.
	ErrUsage = errors.New("devkit: usage")
	// ErrRefused: the plugin would not be admitted; see RefusedError.
	ErrRefused = errors.New("devkit: refused")
)

// usageError is a one-line message for the author that errors.Is matches
// to ErrUsage, without that sentinel's words in it.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// RefusedError is why the catalog would refuse the plugin: Reason is one
// of plugins.Reasons, Err the detail. errors.Is matches it to ErrRefused.
type RefusedError struct {
	Reason string
	Err    error
}

func (e *RefusedError) Error() string        { return e.Reason + ": " + e.Err.Error() }
func (e *RefusedError) Unwrap() error        { return e.Err }
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }
