package executors

import (
	"errors"

	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// Sentinel errors. Call never returns errors (it answers with a refusal);
// these come from NewRuntime, Load and Close.
var (
	// ErrRuntimeClosed is returned by Load after Runtime.Close.
	ErrRuntimeClosed = errors.New("executors: runtime closed")
	// ErrRetired is Ready's answer for a program retired (closed) before
	// its module was compiled.
	ErrRetired = errors.New("executors: program retired before its module was compiled")
	// ErrConfig is wrapped by NewRuntime for an unusable Config.
	ErrConfig = errors.New("executors: invalid config")
	// ErrNoStyle means a module exports neither _start nor the reactor ABI.
	ErrNoStyle = errors.New("executors: module exports neither _start nor the reactor ABI")
	// ErrBadBinary means the module's sections could not be read.
	ErrBadBinary = errors.New("executors: malformed wasm binary")
)

// Admission refusal reasons, the Reason of an AdmissionError.
const (
	ReasonDescriptorInvalid = "descriptor-invalid"
	ReasonCompileFailed     = "compile-failed"
	ReasonImportsRefused    = "imports-refused"
	ReasonRootUnmapped      = "root-unmapped"
	ReasonSchemaInvalid     = toolschema.ReasonInvalid
	ReasonSchemaTooComplex  = toolschema.ReasonTooComplex
	ReasonABIInvalid        = "abi-invalid"
	ReasonMemoryInvalid     = "memory-invalid"
)

// AdmissionError is why Load refused a module. Reason is a stable token
// for logs and metrics; Err carries the detail for the operator.
type AdmissionError struct {
	Reason string
	Err    error
}

func (e *AdmissionError) Error() string {
	return "executors: module not admitted (" + e.Reason + "): " + e.Err.Error()
}

func (e *AdmissionError) Unwrap() error { return e.Err }

func admission(reason string, err error) *AdmissionError {
	return &AdmissionError{Reason: reason, Err: err}
}

// refusal stops a guest from inside a host function. wazero wraps a host
// panic with %w, so the run's error still carries it; the rule itself is
// recorded in the call state before the panic, which is what counts.
type refusal struct{ rule wire.Rule }

func (r *refusal) Error() string { return "executors: call ended: " + string(r.rule) }

// toolError is a tool's own error for its caller (PROTOCOL section 8),
// reported by a command's {"error":…} on exit code 1 or a reactor's
// tool-error status. why is the cleaned, cut text for the answer; it is
// empty when nothing of the message survived, and then the answer keeps
// the generic why.
type toolError struct{ why string }

func newToolError(msg string) *toolError { return &toolError{why: wire.ToolErrorWhy(msg)} }

func (e *toolError) Error() string {
	if e.why == "" {
		return "executors: tool error without a message"
	}
	return "executors: " + e.why
}

// errOutputOver cancels a run whose stdout passed maxOutputBytes;
// errDeadline is the cause of our own timeout and errShuttingDown that of
// a late Runtime.Close, both told apart from the caller cancelling.
var (
	errOutputOver   = errors.New("executors: output over maxOutputBytes")
	errDeadline     = errors.New("executors: timeoutMs elapsed")
	errShuttingDown = errors.New("executors: runtime closing, call cancelled")
	errBadResult    = errors.New("executors: tool output is not exactly one JSON object")
	errToolFailed   = errors.New("executors: tool returned an error")
	errABI          = errors.New("executors: guest broke the reactor ABI")
)
