package channel

import (
	"errors"

	"github.com/coder/websocket"
)

// Sentinel errors of the channel. Door.Answer returns them so a caller (or
// a test) can tell why a frame settled nothing; they never reach a wire
// message, which uses rule ids.
var (
	// ErrFrameRejected is an answer frame that failed wire.ParseAnswer.
	ErrFrameRejected = errors.New("channel: answer frame rejected")
	// ErrUnknownCall is a valid answer whose callId names no call this
	// door is waiting for: never sent, already settled, or another peer's.
	ErrUnknownCall = errors.New("channel: answer for an unknown call")
	// ErrClosed is returned by Reload after Close.
	ErrClosed = errors.New("channel: closed")
)

// Close reasons on /channel (PROTOCOL section 6). They are the whole
// vocabulary a peer may see in a close frame from the broker.
const (
	// ReasonUnauthenticated closes (1008) a connection with a foreign
	// Origin, a loopback page without the view cookie when one is
	// required, or an environment whose hello is missing, late or
	// malformed.
	ReasonUnauthenticated = "executor-unauthenticated"
	// ReasonBearerRefused closes (1008) an environment whose bearer is not
	// paired, or whose pairing was revoked while it was connected.
	ReasonBearerRefused = "bearer-refused"
	// ReasonPageReplaced closes (1000) a page executor when a newer page
	// connects.
	ReasonPageReplaced = "page-replaced"
	// ReasonEnvironmentReplaced closes (1000) an environment when another
	// connection authenticates under the same pairing. `airlock env` stops
	// rather than reconnect, so two environments sharing one bearer do not
	// take turns evicting each other.
	ReasonEnvironmentReplaced = "environment-replaced"
	// ReasonGoingAway closes (1001) every peer when the broker stops.
	ReasonGoingAway = "going away"
	// ReasonSessionExpired closes (StatusSessionExpired, 4402) a page
	// when the session whose view cookie admitted it ends: PROTOCOL
	// section 4 closes every socket of an expired session 4402 with the
	// code's name as reason, and the page's is one of them.
	ReasonSessionExpired = "CREDENTIAL_EXPIRED"
)

// StatusSessionExpired is the close code that goes with
// ReasonSessionExpired: 4402, as on /local/ws.
const StatusSessionExpired websocket.StatusCode = 4402

// LoopbackAuthOffWarning is logged at start-up when channel.loopback_auth
// (VOICEBOX_LOOPBACK_AUTH) was explicitly turned off: the seed's
// Origin-only page check is then in force, and an operator must see it.
const LoopbackAuthOffWarning = "channel.loopback_auth is off: any local process that sends a loopback Origin can become the page executor"

// Reasons of airlock_channel_frames_rejected_total besides the wire rule
// ids (malformed, unknown-field, version-mismatch) of answer frames that
// failed validation.
const (
	reasonUnknownCall    = "unknown-call"    // a valid answer nobody waits for
	reasonCatalogInvalid = "catalog-invalid" // a catalog that failed wire.ParseCatalog
	reasonBudgetMismatch = "budget-mismatch" // an answer whose budget disagrees with the call's bounds
	reasonDescriptorHeld = "descriptor-held" // a page catalog entry for a descriptor another executor holds
)
