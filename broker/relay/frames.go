package relay

import (
	"encoding/json"

	"github.com/airlock/airlock/broker/contract"
)

// envelope is a broker-made frame. Field order is fixed so frames are
// stable for tests and golden files.
type envelope struct {
	ProtocolVersion    int    `json:"protocolVersion"`
	WorkspaceSessionID string `json:"workspaceSessionId"`
	Type               string `json:"type"`
	Payload            any    `json:"payload"`
}

// Frame encodes a broker-owned message for a session.
func Frame(sessionID, typ string, payload any) []byte {
	b, err := json.Marshal(envelope{contract.ProtocolVersion, sessionID, typ, payload})
	if err != nil {
		panic("relay: broker frame does not encode: " + err.Error()) // payloads are our own types
	}
	return b
}

// errorPayload is the payload of a broker error: a code, a static detail
// token and, when known, the request it concerns.
type errorPayload struct {
	Code      contract.Code `json:"code"`
	Detail    string        `json:"detail"`
	RequestID string        `json:"requestId,omitempty"`
}

// ErrorFrame encodes a refusal as a typed error message.
func ErrorFrame(sessionID string, r *contract.Refusal) []byte {
	return Frame(sessionID, "error", errorPayload{r.Code, r.Detail, r.RequestID})
}

type hostConnected struct {
	Role      string   `json:"role"`
	HostEpoch int      `json:"hostEpoch"`
	Views     []string `json:"views"`
	// Capabilities are the session's (Options.Capabilities).
	Capabilities contract.Capabilities `json:"capabilities"`
}

type viewConnected struct {
	Role          string `json:"role"`
	ViewID        string `json:"viewId"`
	HostConnected bool   `json:"hostConnected"`
	HostEpoch     int    `json:"hostEpoch"`
	// Capabilities are the session's (Options.Capabilities).
	Capabilities contract.Capabilities `json:"capabilities"`
}

type connectionState struct {
	State     string `json:"state"`
	HostEpoch int    `json:"hostEpoch"`
}

type viewState struct {
	ViewID string `json:"viewId"`
	State  string `json:"state"`
}

// synthesizedCancel is what the host receives for each request of a view
// that left.
type synthesizedCancel struct {
	RequestID string          `json:"requestId"`
	Target    json.RawMessage `json:"target"`
	Reason    string          `json:"reason"`
}

func stateWord(connected bool) string {
	if connected {
		return "connected"
	}
	return "disconnected"
}
