// Package contract is the /local surface's one vocabulary: the frozen
// /local/ws message contract (PROTOCOL section 4: the envelope, the schema
// of every message type and the order in which a frame is checked), and
// every name a /local client and the broker spell alike: error codes,
// close codes and close reasons (codes.go), roles, cookie, header and
// subprotocol names (names.go), capabilities. Every inbound frame passes
// through Validate exactly once; nothing else in the broker parses client
// frames. It imports only the standard library and wire, so the Go
// clients use it without the broker.
package contract

import (
	"encoding/json"
	"errors"

	"github.com/airlock/airlock/executors/wire"
)

// ProtocolVersion is the only version this broker speaks.
const ProtocolVersion = 1

// DefaultMaxFrameBytes is the frame cap of PROTOCOL section 4.2:
// 16 MiB.
const DefaultMaxFrameBytes = 16 << 20

// Frame is one inbound WebSocket message as the socket layer saw it. A
// binary or oversize frame has no Data: it was never buffered whole.
type Frame struct {
	Binary   bool
	Oversize bool
	Data     []byte
}

// Context is what validation needs to know about the socket.
type Context struct {
	Role      Role
	SessionID string
	// ViewID is the socket's own view id (views only); payload viewIds
	// must equal it.
	ViewID string
	// Handshake is true until the broker answered connected: only hello
	// is acceptable then.
	Handshake bool
	// CanPropose allows sourceEdit*: the session was minted with
	// canProposeSourceEdits and the broker allows proposals.
	CanPropose bool
}

// Message is a frame that passed validation. Raw is the frame exactly as
// received, which is what the relay forwards: what was checked is what is
// sent.
type Message struct {
	Type         string
	Spec         Spec
	Raw          []byte
	HostSequence int64 // 0 when absent
	RequestID    string
	Target       string // canonical JSON of payload.target; "" when absent
	ViewID       string // payload.viewId when present

	payloadLen int
	payload    payloadFields // the members the checks read
}

// envelopeKeys are the only top-level keys a frame may carry.
var envelopeKeys = map[string]bool{
	"protocolVersion": true, "workspaceSessionId": true, "type": true, "payload": true, "hostSequence": true,
}

// Validate checks one frame in the order of PROTOCOL section 4.2,
// stopping at the first failure: frame kind and size, JSON object, protocol version, session,
// envelope shape, known type, then the type's role, capability, ordering
// and payload rules.
func Validate(f Frame, c Context) (*Message, *Refusal) {
	if f.Binary {
		return nil, invalid(DetailBinaryFrame)
	}
	if f.Oversize {
		return nil, invalid(DetailFrameTooLarge)
	}
	top, r := envelopeMembers(f.Data)
	if r != nil {
		return nil, r
	}
	if !isOne(top.version) {
		return nil, refuse(ProtocolVersionMismatch, DetailProtocolVersion)
	}
	if !stringIs(top.session, c.SessionID) {
		return nil, refuse(SessionMismatch, DetailSessionMismatch)
	}
	m, r := envelope(top)
	if r != nil {
		return nil, r
	}
	m.Raw = f.Data
	if r := checkType(m, c); r != nil {
		r.RequestID = m.RequestID
		return nil, r
	}
	return m, nil
}

// envelope checks the envelope's shape (step 5): only allowed keys, a
// string type, an object payload, an optional positive integer
// hostSequence.
func envelope(top envelopeFields) (*Message, *Refusal) {
	if top.unknown {
		return nil, invalid(DetailEnvelopeKey)
	}
	typ, ok := internedString(top.typ, typeNames)
	if !ok {
		return nil, invalid(DetailEnvelopeType)
	}
	raw := top.payload
	// The frame passed the strict walk, so the payload is a JSON value
	// checked in full; it must be an object (its members were split in
	// that same walk: envelopeMembers).
	if raw == nil || raw[0] != '{' {
		return nil, invalid(DetailEnvelopePayload)
	}
	m := &Message{Type: typ, payloadLen: len(raw), payload: top.fields}
	if seq, present := top.sequence, top.sequence != nil; present {
		n, ok := intValue(seq)
		if !ok || n < 1 {
			return nil, invalid(DetailEnvelopeSequence)
		}
		m.HostSequence = n
	}
	if id, ok := stringValue(m.payload[keyRequestID]); ok && validRequestID(id) {
		m.RequestID = id
	}
	return m, nil
}

// checkType applies the type's rules (steps 6 and 7).
func checkType(m *Message, c Context) *Refusal {
	spec, known := specs[m.Type]
	if !known {
		return refuse(UnknownMessage, DetailUnknownType)
	}
	m.Spec = spec
	switch {
	case c.Handshake && m.Type != "hello":
		return invalid(DetailHelloExpected)
	case !c.Handshake && m.Type == "hello":
		return invalid(DetailHelloRepeated)
	case spec.From == 0:
		return invalid(DetailBrokerOwned)
	case spec.From&c.Role == 0:
		return invalid(DetailDirection)
	case spec.Family == SourceEdits && !c.CanPropose:
		return invalid(DetailCapability)
	case spec.Ordered && m.HostSequence == 0:
		return invalid(DetailSequenceMissing)
	case !spec.Ordered && m.HostSequence != 0:
		return invalid(DetailSequenceForbidden)
	}
	if spec.check != nil {
		return spec.check(payload{m: m}, c)
	}
	return nil
}

// MaxFrameDepth bounds the nesting of a frame: encoding/json's own bound,
// which every later reader of the frame (canonical targets, clients
// written in Go) would hit anyway. Frames carry client state, so the
// bound is far above the envelopes' wire.MaxDepth.
const MaxFrameDepth = 10000

// payloadKeys are the payload members the checks read. The walk of a
// frame keeps these, and only these, of its payload, in a fixed array
// (payloadFields), so a payload costs no map and no key strings; a check
// that reads a key missing here panics (payload.raw), which every golden
// frame of testdata/relay would show.
var payloadKeys = [...]string{keyRequestID: "requestId", "viewId", "nodeId", "target", "atHostSequence",
	"lastHostSequence", "connectUrl", "graphUrl", "shareUrl", "message", "phase", "state", "status", "graphGzipBase64"}

const keyRequestID = 0

// payloadIndex is the index of each of payloadKeys.
var payloadIndex = func() map[string]int {
	m := make(map[string]int, len(payloadKeys))
	for i, k := range payloadKeys {
		m[k] = i
	}
	return m
}()

// payloadFields holds a payload's members named in payloadKeys, each nil
// when absent (a present JSON value is never empty).
type payloadFields [len(payloadKeys)]json.RawMessage

// typeNames holds each message type's name, so a frame's type is taken
// from here instead of allocated.
var typeNames = func() map[string]string {
	m := make(map[string]string, len(specs))
	for k := range specs {
		m[k] = k
	}
	return m
}()

// envelopeFields are a frame's top-level members, each nil when absent (a
// present JSON value is never empty); unknown is set when the frame has
// a key outside envelopeKeys.
type envelopeFields struct {
	version, session, typ, payload, sequence json.RawMessage
	unknown                                  bool
	fields                                   payloadFields // of payload, when it is an object
}

// envelopeMembers splits data, which must be exactly one JSON object,
// into its members after wire's strict walk of the whole of it: valid
// UTF-8, and no two keys equal under case folding in any object at any
// depth (PROTOCOL section 1), since two readers (the broker and a client)
// could take different values from them. The same walk splits the
// payload, when it is an object, into the members the checks read: the
// payload was checked as part of the frame, so it is walked once, not
// again on its own (broker/session/RATIONALE.md, "Why is a relay frame walked once, its
// payload split in the same walk?").
func envelopeMembers(data []byte) (envelopeFields, *Refusal) {
	var top envelopeFields
	err := wire.EachMemberOf(data, MaxFrameDepth, "payload", top.take, func(key []byte, v json.RawMessage) {
		if i, ok := payloadIndex[string(key)]; ok {
			top.fields[i] = v
		}
	})
	if r := walkRefusal(err); r != nil {
		return envelopeFields{}, r
	}
	return top, nil
}

// take keeps one top-level member of the envelope.
func (f *envelopeFields) take(key []byte, v json.RawMessage) {
	switch string(key) {
	case "protocolVersion":
		f.version = v
	case "workspaceSessionId":
		f.session = v
	case "type":
		f.typ = v
	case "payload":
		f.payload = v
	case "hostSequence":
		f.sequence = v
	default:
		f.unknown = true
	}
}

// walkRefusal names why wire's strict walk refused a frame; nil for none.
func walkRefusal(err error) *Refusal {
	switch {
	case errors.Is(err, wire.ErrDuplicateKey):
		return invalid(DetailDuplicateKey)
	case err != nil:
		return invalid(DetailNotJSONObject)
	}
	return nil
}
