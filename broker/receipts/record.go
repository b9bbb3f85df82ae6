// Package receipts keeps the broker's tamper-evident receipt log: one JSON
// line per tool call (and per admission event), each chained to the one
// before by the SHA-256 of its exact bytes, so that a record changed,
// removed or moved is found by Verify. See README.md beside this file.
package receipts

import (
	"encoding/json"
	"time"

	"github.com/airlock/airlock/executors/wire"
)

// Kind names what a record is about: the one vocabulary of record types.
type Kind string

// The record kinds.
const (
	// KindCall is one tool call answered by the router, on any door.
	KindCall Kind = "call"
	// KindPluginAdmitted, KindPluginReadmitted and KindPluginRetired
	// follow the local plugin catalog: a folder admitted for the first
	// time, admitted again after it changed, or removed.
	KindPluginAdmitted   Kind = "plugin-admitted"
	KindPluginReadmitted Kind = "plugin-readmitted"
	KindPluginRetired    Kind = "plugin-retired"
	// KindPairingAdded and KindPairingRemoved follow the pairings file as
	// the channel reloads it.
	KindPairingAdded   Kind = "pairing-added"
	KindPairingRemoved Kind = "pairing-removed"
	// KindSessionMinted and KindSessionExpired name a workspace session by
	// its id only.
	KindSessionMinted  Kind = "session-minted"
	KindSessionExpired Kind = "session-expired"
)

// Kinds lists every kind, for documentation and tests.
var Kinds = []Kind{KindCall, KindPluginAdmitted, KindPluginReadmitted, KindPluginRetired,
	KindPairingAdded, KindPairingRemoved, KindSessionMinted, KindSessionExpired}

// The doors a call can come in by.
const (
	DoorV1       = "v1"        // POST /v1/calls
	DoorMCPStdio = "mcp-stdio" // airlock mcp
	DoorMCPHTTP  = "mcp-http"  // /mcp
	DoorOther    = "other"     // a caller that named no door (an in-process caller)
)

// Genesis is the prev of the very first record: 64 zeros, the hash of
// nothing that was ever written.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one receipt. Seq and Prev chain it; the other members say what
// happened, never with what: a call's arguments are kept only as an HMAC,
// and no token, bearer, cookie or credential is a member. Members that do
// not apply to a kind are left out.
type Record struct {
	Seq  uint64    `json:"seq"`
	Prev string    `json:"prev"`
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`

	// A call's members.
	Door       string `json:"door,omitempty"`
	Executor   string `json:"executor,omitempty"` // local, page, machine:NAME
	Descriptor string `json:"descriptor,omitempty"`
	// Module is the admitted module's SHA-256 (plugin.json's sha256); a
	// page's or a machine's descriptor has none the broker can vouch for.
	Module string `json:"module,omitempty"`
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"callId,omitempty"`
	// ArgsHMAC is HMAC-SHA256 of the canonical args under the key file.
	ArgsHMAC string `json:"argsHmac,omitempty"`
	// Bounds is the SHA-256 of the canonical bounds the call ran under.
	Bounds string `json:"bounds,omitempty"`
	// Outcome is ok, a rule id, or cancelled.
	Outcome    string       `json:"outcome,omitempty"`
	DurationMs *float64     `json:"durationMs,omitempty"`
	Budget     *wire.Budget `json:"budget,omitempty"`

	// ID names the subject of an admission event: a plugin id, a pairing
	// name, a session id.
	ID string `json:"id,omitempty"`
}

// head is what Verify reads of every line: the chain members.
type head struct {
	Seq  *uint64 `json:"seq"`
	Prev *string `json:"prev"`
}

// marshal encodes r as one line without its newline.
func marshal(r *Record) ([]byte, error) { return json.Marshal(r) }
