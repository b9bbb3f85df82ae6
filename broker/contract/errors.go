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

// Detail tokens of refusals raised by the contract itself. The relay hub
// adds its own routing tokens (sequence, no-host, …); the whole table is in
// broker/session/README.md.
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

func refuse(c Code, detail string) *Refusal { return &Refusal{Code: c, Detail: detail} }

func invalid(detail string) *Refusal { return refuse(InvalidMessage, detail) }
