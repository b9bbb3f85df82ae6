// Package exitcode holds the exit codes of every airlock command: the
// binary decides with them and the end-to-end suite checks the binary
// against them, so the table has one home. See cmd/airlock/RATIONALE.md,
// "Why one exit-code table, and why is a refused credential exit 3?".
package exitcode

const (
	OK      = 0 // the command did its job
	Failed  = 1 // it could not: the broker unreachable, a tool not found, a file not written
	Usage   = 2 // bad flags or arguments, bad configuration, an unusable secret or folder
	Refused = 3 // a call answered refused, a plugin refused admission, a credential refused
)
