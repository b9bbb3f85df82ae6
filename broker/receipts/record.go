// Package receipts keeps the broker's tamper-evident receipt log: one JSON
// line per tool call (and per admission event), each chained to the one
// before by the SHA-256 of its exact bytes, so that a record changed,
// removed or moved is found by Verify. See README.md beside this file.
package receipts

import (
	"encoding/json"
	"math"
	"strconv"
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

// appendLine appends r's line without its newline: the bytes
// json.Marshal writes for r. A record whose strings are all plain (the
// ids, digests and names a receipt holds) is written by hand, with no
// reflection and nothing allocated; any other goes through json.Marshal,
// so the bytes are the same either way (FuzzAppendLine).
func appendLine(dst []byte, r *Record) ([]byte, error) {
	if !r.plain() {
		c := *r // escapes to json.Marshal: copied only here
		line, err := json.Marshal(&c)
		return append(dst, line...), err
	}
	dst = strconv.AppendUint(append(dst, `{"seq":`...), r.Seq, 10)
	dst = append(append(append(dst, `,"prev":"`...), r.Prev...), `","time":"`...)
	dst = append(r.Time.AppendFormat(dst, time.RFC3339Nano), `","kind":"`...)
	dst = append(append(dst, r.Kind...), '"')
	dst = appendMember(dst, `,"door":"`, r.Door)
	dst = appendMember(dst, `,"executor":"`, r.Executor)
	dst = appendMember(dst, `,"descriptor":"`, r.Descriptor)
	dst = appendMember(dst, `,"module":"`, r.Module)
	dst = appendMember(dst, `,"tool":"`, r.Tool)
	dst = appendMember(dst, `,"callId":"`, r.CallID)
	dst = appendMember(dst, `,"argsHmac":"`, r.ArgsHMAC)
	dst = appendMember(dst, `,"bounds":"`, r.Bounds)
	dst = appendMember(dst, `,"outcome":"`, r.Outcome)
	if r.DurationMs != nil {
		dst = appendFloat(append(dst, `,"durationMs":`...), *r.DurationMs)
	}
	if b := r.Budget; b != nil {
		dst = strconv.AppendInt(append(dst, `,"budget":{"requestsUsed":`...), int64(b.RequestsUsed), 10)
		dst = append(strconv.AppendInt(append(dst, `,"requestsLimit":`...), int64(b.RequestsLimit), 10), '}')
	}
	dst = appendMember(dst, `,"id":"`, r.ID)
	return append(dst, '}'), nil
}

// appendMember appends an omitempty string member; key ends in its
// value's opening quote.
func appendMember(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return append(append(append(dst, key...), v...), '"')
}

// appendFloat writes f as encoding/json does: the shortest form, in
// exponent form below 1e-6 and from 1e21, with a one-digit negative
// exponent unpadded.
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// plain reports whether appendLine can write r by hand: every string is
// one encoding/json writes unescaped under its HTML escaping, the time is
// UTC within the years it encodes, the duration is finite.
func (r *Record) plain() bool {
	for _, s := range [...]string{r.Prev, string(r.Kind), r.Door, r.Executor, r.Descriptor, r.Module, r.Tool,
		r.CallID, r.ArgsHMAC, r.Bounds, r.Outcome, r.ID} {
		if !plainString(s) {
			return false
		}
	}
	if y := r.Time.Year(); y < 0 || y > 9999 || r.Time.Location() != time.UTC {
		return false
	}
	return r.DurationMs == nil || (!math.IsNaN(*r.DurationMs) && !math.IsInf(*r.DurationMs, 0))
}

// plainString reports whether s is printable ASCII that encoding/json
// writes as it is: no quote, backslash, or '<', '>', '&' (which
// json.Marshal escapes).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
