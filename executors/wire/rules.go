// Package wire is the one validation module for executor-channel envelopes.
//
// Every call and answer, whether it arrives on POST /v1/calls, on /channel
// or is built inside the broker, is parsed and checked here and nowhere
// else, so the refusal vocabulary means the same thing on every hop.
package wire

// Version is the only envelope version this package accepts ("v":1).
const Version = 1

// Rule is a refusal rule id: the complete vocabulary of why a call was not
// answered with an observation.
type Rule string

// The rule ids. The set is closed: ParseAnswer refuses any other value and
// metric labels use these strings as they are.
const (
	Malformed          Rule = "malformed"
	UnknownField       Rule = "unknown-field"
	VersionMismatch    Rule = "version-mismatch"
	UnattributedCall   Rule = "unattributed-call"
	BoundsMismatch     Rule = "bounds-mismatch"
	UnknownTool        Rule = "unknown-tool"
	ArgsInvalid        Rule = "args-invalid"
	ExecThrew          Rule = "exec-threw"
	ExecTimeout        Rule = "exec-timeout"
	MemoryExhausted    Rule = "memory-exhausted"
	OutputTooLarge     Rule = "output-too-large"
	OutputInvalid      Rule = "output-invalid"
	HostNotAllowed     Rule = "host-not-allowed"
	FetchFailed        Rule = "fetch-failed"
	BudgetExhausted    Rule = "budget-exhausted"
	NoPage             Rule = "no-page"
	MachineUnreachable Rule = "machine-unreachable"
	PageTimeout        Rule = "page-timeout"
	MachineTimeout     Rule = "machine-timeout"
	PageClosed         Rule = "page-closed"
	MachineClosed      Rule = "machine-closed"
	Overloaded         Rule = "overloaded"
	ShuttingDown       Rule = "shutting-down"
	AuditUnavailable   Rule = "audit-unavailable"
)

// Cancelled is not a rule id: Known is false, so ParseAnswer refuses it
// and no peer can send it. An executor answers with it a call whose
// caller cancelled it before the answer (an MCP notifications/cancelled,
// a closed request): nobody reads that answer, and the run it cut is not
// the tool's failure. The router counts such a call with the outcome of
// the same name (metrics.Cancelled), never as a refusal.
const Cancelled Rule = "cancelled"

// Rules lists every rule id in a stable order (for metrics pre-registration
// and documentation).
var Rules = []Rule{
	Malformed, UnknownField, VersionMismatch, UnattributedCall, BoundsMismatch,
	UnknownTool, ArgsInvalid, ExecThrew, ExecTimeout, MemoryExhausted,
	OutputTooLarge, OutputInvalid, HostNotAllowed, FetchFailed, BudgetExhausted, NoPage,
	MachineUnreachable, PageTimeout, MachineTimeout, PageClosed, MachineClosed,
	Overloaded, ShuttingDown, AuditUnavailable,
}

var knownRules = func() map[Rule]bool {
	m := make(map[Rule]bool, len(Rules))
	for _, r := range Rules {
		m[r] = true
	}
	return m
}()

// Known reports whether r is in the vocabulary.
func (r Rule) Known() bool { return knownRules[r] }

// IsTimeout reports whether r says a call ran out of time, wherever it ran.
func (r Rule) IsTimeout() bool {
	return r == ExecTimeout || r == PageTimeout || r == MachineTimeout
}

// why is the static human text for each rule. Refusals built by the broker
// use it unless the caller supplies a more specific one (the builders in
// boundwhy.go, which add the bound's value and what the call reached); it
// never quotes request content, so it can never carry a secret. A rule a
// bound decides names that bound by its key in plugin.json.
var why = map[Rule]string{
	Malformed:          "the envelope is not valid JSON of the expected shape",
	UnknownField:       "the envelope carries a key outside the allowlist",
	VersionMismatch:    "the envelope version is not 1",
	UnattributedCall:   "the descriptor is not admitted here",
	BoundsMismatch:     "boundsEcho does not equal the admitted bounds",
	UnknownTool:        "the descriptor does not declare this tool",
	ArgsInvalid:        "args do not satisfy the tool's inputSchema",
	ExecThrew:          "the tool failed",
	ExecTimeout:        "the tool ran past bounds.timeoutMs",
	MemoryExhausted:    "the tool needed more memory than bounds.memoryMiB",
	OutputTooLarge:     "the tool's output is over bounds.maxOutputBytes",
	OutputInvalid:      "the tool's output does not satisfy its outputSchema",
	HostNotAllowed:     "the tool fetched a host outside bounds.allowedHosts",
	FetchFailed:        "an allowed fetch could not complete",
	BudgetExhausted:    "the tool made more fetches than bounds.maxRequests",
	NoPage:             "no page executor is connected",
	MachineUnreachable: "the environment that admitted the descriptor is not connected",
	PageTimeout:        "the page executor did not answer in time",
	MachineTimeout:     "the environment did not answer in time",
	PageClosed:         "the page executor went away with the call in flight",
	MachineClosed:      "the environment went away with the call in flight",
	Overloaded:         "the executor is at its concurrency bound",
	ShuttingDown:       "the broker is draining",
	AuditUnavailable:   "the receipt of the call could not be written and audit.fail is closed",
	Cancelled:          "the caller cancelled the call",
}

// Why returns the default static text for r.
func (r Rule) Why() string {
	if w, ok := why[r]; ok {
		return w
	}
	return "refused"
}
