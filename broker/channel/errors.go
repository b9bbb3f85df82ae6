package channel

import (
	"errors"

	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// Sentinel errors of the channel. Remote.Answer returns them so a caller (or
// a test) can tell why a frame settled nothing; they never reach a wire
// message, which uses rule ids.
var (
	// ErrFrameRejected is an answer frame that failed wire.ParseAnswer.
	ErrFrameRejected = errors.New("channel: answer frame rejected")
	// ErrUnknownCall is a valid answer whose callId names no call this
	// remote is waiting for: never sent, already settled, or another peer's.
	ErrUnknownCall = errors.New("channel: answer for an unknown call")
	// ErrClosed is returned by Reload after Close.
	ErrClosed = errors.New("channel: closed")
)

// LoopbackAuthOffWarning is logged at start-up when channel.loopback_auth
// (VOICEBOX_LOOPBACK_AUTH) was explicitly turned off: the seed's
// Origin-only page check is then in force, and an operator must see it.
const LoopbackAuthOffWarning = "channel.loopback_auth is off: any local process that sends a loopback Origin can become the page executor"

// Reasons of airlock_channel_frames_rejected_total besides the wire rule
// ids (malformed, unknown-field, version-mismatch) of answer frames that
// failed validation and the schema reasons (toolschema.ReasonInvalid,
// toolschema.ReasonTooComplex) of catalog entries dropped for their
// inputSchema. Only unknown-rule settles a call (exec-threw); every other
// reason settled nothing.
const (
	reasonUnknownRule    = "unknown-rule"    // a refusal under a well-formed rule id outside the vocabulary
	reasonUnknownCall    = "unknown-call"    // a valid answer nobody waits for
	reasonCatalogInvalid = "catalog-invalid" // a catalog that failed wire.ParseCatalog
	reasonBudgetMismatch = "budget-mismatch" // an answer whose budget disagrees with the call's bounds
	reasonDescriptorHeld = "descriptor-held" // a page catalog entry for a descriptor another executor holds
)

// frameReasons is the closed set of the reason label, declared at zero.
var frameReasons = []string{
	string(wire.Malformed), string(wire.UnknownField), string(wire.VersionMismatch),
	reasonUnknownRule, reasonUnknownCall, reasonCatalogInvalid, reasonBudgetMismatch, reasonDescriptorHeld,
	toolschema.ReasonInvalid, toolschema.ReasonTooComplex,
}
