package contract

import "fmt"

// Refusal is why a frame was not accepted: an error code of the contract,
// a static detail token (see Details) and, when the frame named a
// well-formed requestId, that id so the client can correlate.
//
// A Refusal never carries frame content: Detail is always one of the
// constants below.
type Refusal struct {
	Code      Code
	Detail    string
	RequestID string
}

// Error implements error.
func (r *Refusal) Error() string {
	return fmt.Sprintf("contract: %s (%s)", r.Code, r.Detail)
}

// Detail tokens of refusals raised by the contract itself (with the
// routing tokens below, every detail a /local/ws error frame carries; the
// table of when each is sent is in broker/session/README.md).
const (
	DetailBinaryFrame       = "binary-frame"
	DetailFrameTooLarge     = "frame-too-large"
	DetailNotJSONObject     = "not-json-object"
	DetailDuplicateKey      = "duplicate-key"
	DetailProtocolVersion   = "protocol-version"
	DetailSessionMismatch   = "session-mismatch"
	DetailEnvelopeKey       = "envelope-key"
	DetailEnvelopeType      = "envelope-type"
	DetailEnvelopePayload   = "envelope-payload"
	DetailEnvelopeSequence  = "envelope-host-sequence"
	DetailUnknownType       = "unknown-type"
	DetailHelloExpected     = "hello-expected"
	DetailHelloRepeated     = "hello-repeated"
	DetailBrokerOwned       = "broker-owned"
	DetailDirection         = "direction"
	DetailCapability        = "capability"
	DetailSequenceMissing   = "host-sequence-missing"
	DetailSequenceForbidden = "host-sequence-unexpected"
	DetailPayload           = "payload"
	DetailRequestID         = "request-id"
	DetailTarget            = "target"
	DetailViewID            = "view-id"
	DetailURL               = "url"
	DetailGraphBase64       = "graph-base64"
	DetailGraphNotGzip      = "graph-not-gzip"
	DetailGraphTooLarge     = "graph-too-large"
	DetailResultTooLarge    = "result-too-large"
)

// Detail tokens of refusals raised past the frame's own checks: by the
// relay's routing, and by the handshake timer.
const (
	DetailSequence          = "sequence"
	DetailNoPendingSnapshot = "no-pending-snapshot"
	DetailNoHost            = "no-host"
	DetailDuplicateRequest  = "duplicate-request"
	DetailNotOwner          = "not-owner"
	DetailKindMismatch      = "kind-mismatch"
	DetailUnknownRequest    = "unknown-request"
	DetailTargetMismatch    = "target-mismatch"
	DetailViewMismatch      = "view-mismatch"
	DetailTooManyRequests   = "too-many-requests"
	DetailHostConnected     = "host-already-connected"
	// DetailBusy refuses a view's frame for the host when the view has
	// its maximum of requests in flight, or when the frame would take the
	// host's queue past the share open to view traffic. The view may try
	// again later; the host is never dropped for view traffic.
	DetailBusy = "busy"
	// DetailHandshakeTimeout: no hello arrived within
	// local.handshake_timeout_ms.
	DetailHandshakeTimeout = "handshake-timeout"
)

func refuse(c Code, detail string) *Refusal { return &Refusal{Code: c, Detail: detail} }

func invalid(detail string) *Refusal { return refuse(InvalidMessage, detail) }
