package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// Call is a validated call envelope. Args and BoundsEcho are compact JSON
// objects.
type Call struct {
	V            int             `json:"v"`
	CallID       string          `json:"callId"`
	Tool         string          `json:"tool"`
	DescriptorID string          `json:"descriptorId"`
	Args         json.RawMessage `json:"args"`
	BoundsEcho   json.RawMessage `json:"boundsEcho"`
}

// Budget is the fetch accounting of one call.
type Budget struct {
	RequestsUsed  int `json:"requestsUsed"`
	RequestsLimit int `json:"requestsLimit"`
}

// Answer is a validated answer envelope: either OK with Observed, or a
// refusal with a known Rule and human text in Why.
type Answer struct {
	V        int
	CallID   string
	OK       bool
	Observed json.RawMessage // compact JSON object when OK
	Refused  Rule
	Why      string
	Budget   *Budget
}

// maxIDLen bounds callId, tool and descriptorId.
const maxIDLen = 128

// The members an envelope may hold, each with its slot in a split
// envelope (members): an envelope is split without a map, each allowed
// key's value landing in its slot (broker/channel/RATIONALE.md, "Why are envelopes split
// into slots instead of maps?").
const (
	slotV = iota
	slotCallID
	slotTool
	slotDescriptorID
	slotArgs
	slotBoundsEcho
	slotOK
	slotObserved
	slotRefused
	slotWhy
	slotBudget
	slotRequestsUsed
	slotRequestsLimit
	nSlots
)

// slotOf names each slot's key; the allow masks say which keys each kind
// of object admits.
var slotOf = map[string]int{
	"v": slotV, "callId": slotCallID, "tool": slotTool, "descriptorId": slotDescriptorID,
	"args": slotArgs, "boundsEcho": slotBoundsEcho, "ok": slotOK, "observed": slotObserved,
	"refused": slotRefused, "why": slotWhy, "budget": slotBudget,
	"requestsUsed": slotRequestsUsed, "requestsLimit": slotRequestsLimit,
}

const (
	callKeys   = 1<<slotV | 1<<slotCallID | 1<<slotTool | 1<<slotDescriptorID | 1<<slotArgs | 1<<slotBoundsEcho
	answerKeys = 1<<slotV | 1<<slotCallID | 1<<slotOK | 1<<slotObserved | 1<<slotRefused | 1<<slotWhy | 1<<slotBudget
	budgetKeys = 1<<slotRequestsUsed | 1<<slotRequestsLimit
)

// members is one walked object split into slots: a nil slot is a key the
// object does not hold (a walked value is never empty). unknown reports a
// key outside the object's allow mask.
type members struct {
	slot    [nSlots]json.RawMessage
	unknown bool
}

// split walks data (Walk with MaxDepth), which must be one JSON object,
// into slots, admitting the keys of allowed. Keys are compared as the
// walk reads them (escapes resolved), exactly as a map built by Members
// would hold them; the walk has refused duplicates, so a slot is filled at
// most once.
func split(data []byte, allowed uint16, m *members) error {
	return EachMember(data, MaxDepth, func(key []byte, value json.RawMessage) {
		i, ok := slotOf[string(key)] // no allocation for the lookup
		if !ok || allowed&(1<<i) == 0 {
			m.unknown = true
			return
		}
		m.slot[i] = value
	})
}

// ParseCall validates data as a call envelope.
//
// Checks run in this order, stopping at the first failure: one JSON object
// with unique keys (malformed); "v" present and a number other than 1
// (version-mismatch); a key outside the allowlist (unknown-field); a
// required key missing or of the wrong type, an id out of bounds (malformed).
func ParseCall(data []byte) (Call, error) {
	var m members
	if err := envelope(data, callKeys, &m); err != nil {
		return Call{}, err
	}
	c := Call{V: Version}
	var ok bool
	if c.CallID, ok = ident(m.slot[slotCallID]); !ok {
		return Call{}, fail(Malformed, "callId must be a string of 1 to 128 identifier characters")
	}
	if c.Tool, ok = ident(m.slot[slotTool]); !ok {
		return Call{}, fail(Malformed, "tool must be a string of 1 to 128 identifier characters")
	}
	if c.DescriptorID, ok = ident(m.slot[slotDescriptorID]); !ok {
		return Call{}, fail(Malformed, "descriptorId must be a string of 1 to 128 identifier characters")
	}
	if c.Args, ok = asObject(m.slot[slotArgs]); !ok {
		return Call{}, fail(Malformed, "args must be an object")
	}
	if c.BoundsEcho, ok = asObject(m.slot[slotBoundsEcho]); !ok {
		return Call{}, fail(Malformed, "boundsEcho must be an object")
	}
	return c, nil
}

// ParseAnswer validates data as an answer envelope, in the same order as
// ParseCall. An OK answer must carry an observed object and no refusal; a
// refusal must carry a known rule id and a why text and no observation.
func ParseAnswer(data []byte) (Answer, error) {
	a, _, err := parseAnswer(data, false)
	return a, err
}

// ParsePeerAnswer is ParseAnswer for an answer from a peer executor, which
// may speak a newer vocabulary than ours (PROTOCOL section 6.5): a
// refusal that would pass ParseAnswer but for a rule id outside Rules,
// written as an identifier (1 to 128 characters, as callId), is taken as
// exec-threw with a why that names the peer's rule (ForeignWhy), its
// budget kept, and foreign reports it. Any other failure is ParseAnswer's.
func ParsePeerAnswer(data []byte) (a Answer, foreign bool, err error) {
	return parseAnswer(data, true)
}

// ForeignWhy is the why of a peer's refusal under rule, a rule id outside
// the vocabulary, whose own why was why: both cleaned as PeerWhy does and
// cut, together, to MaxWhyBytes, the rule first so that the cut never
// loses it. The peer's why is cut before it is copied. It never starts
// with ToolErrorPrefix: the broker is speaking.
func ForeignWhy(rule, why string) string {
	head := CleanWhy(foreignWhyPrefix+rule, MaxWhyBytes)
	if rest := MaxWhyBytes - len(head) - len(": "); rest > 0 {
		if why = CleanWhy(why, rest); why != "" {
			head += ": " + why
		}
	}
	return head
}

const foreignWhyPrefix = "the peer refused under a rule this broker does not know: "

func parseAnswer(data []byte, peer bool) (Answer, bool, error) {
	var m members
	if err := envelope(data, answerKeys, &m); err != nil {
		return Answer{}, false, err
	}
	a := Answer{V: Version}
	var ok bool
	var err error
	if a.CallID, ok = ident(m.slot[slotCallID]); !ok {
		return Answer{}, false, fail(Malformed, "callId must be a string of 1 to 128 identifier characters")
	}
	if a.OK, ok = asBool(m.slot[slotOK]); !ok {
		return Answer{}, false, fail(Malformed, "ok must be a boolean")
	}
	if raw := m.slot[slotBudget]; raw != nil {
		if a.Budget, err = parseBudget(raw); err != nil {
			return Answer{}, false, err
		}
	}
	if a.OK {
		if m.slot[slotRefused] != nil {
			return Answer{}, false, fail(Malformed, "an ok answer carries no refusal")
		}
		if m.slot[slotWhy] != nil {
			return Answer{}, false, fail(Malformed, "an ok answer carries no refusal")
		}
		if a.Observed, ok = asObject(m.slot[slotObserved]); !ok {
			return Answer{}, false, fail(Malformed, "an ok answer needs an observed object")
		}
		return a, false, nil
	}
	if m.slot[slotObserved] != nil {
		return Answer{}, false, fail(Malformed, "a refusal carries no observation")
	}
	r, known := asString(m.slot[slotRefused])
	known = known && Rule(r).Known()
	foreign := false
	if !known {
		if r, foreign = ident(m.slot[slotRefused]); !peer || !foreign {
			return Answer{}, false, fail(Malformed, "refused must be a known rule id")
		}
	}
	if a.Why, ok = asString(m.slot[slotWhy]); !ok {
		return Answer{}, false, fail(Malformed, "a refusal needs a why text")
	}
	a.Refused = Rule(r)
	if foreign {
		a.Refused, a.Why = ExecThrew, ForeignWhy(r, a.Why)
	}
	return a, foreign, nil
}

// envelope splits data into m and applies the checks shared by calls
// and answers: the version, then the allowlist.
func envelope(data []byte, allowed uint16, m *members) error {
	if err := split(data, allowed, m); err != nil {
		return err
	}
	v := m.slot[slotV]
	if v != nil && isNumber(v) && string(v) != "1" {
		return fail(VersionMismatch, "v must be 1")
	}
	if m.unknown {
		return fail(UnknownField, "a key outside the allowlist")
	}
	if v == nil {
		return fail(Malformed, "v is required")
	}
	if string(v) != "1" {
		return fail(Malformed, "v must be the number 1")
	}
	return nil
}

func parseBudget(raw json.RawMessage) (*Budget, error) {
	var m members
	if split(raw, budgetKeys, &m) != nil {
		return nil, fail(Malformed, "budget must be an object")
	}
	if m.unknown {
		return nil, fail(UnknownField, "a budget key outside the allowlist")
	}
	var b Budget
	var ok1, ok2 bool
	b.RequestsUsed, ok1 = asCount(m.slot[slotRequestsUsed])
	b.RequestsLimit, ok2 = asCount(m.slot[slotRequestsLimit])
	if !ok1 || !ok2 {
		return nil, fail(Malformed, "budget counts must be non-negative integers")
	}
	return &b, nil
}

// ident accepts a string of 1 to maxIDLen characters that are all
// identifier-safe (IDRune), so ids are safe to log and to show.
func ident(raw json.RawMessage) (string, bool) {
	s, ok := asString(raw)
	if !ok || s == "" || utf8.RuneCountInString(s) > maxIDLen {
		return "", false
	}
	for _, r := range s {
		if !IDRune(r) {
			return "", false
		}
	}
	return s, true
}

// IDRune reports whether r may appear in an identifier (callId, tool,
// descriptorId, a bearer): any character that is not Unsafe, so ids may
// be in any script yet cannot make a logged or displayed id read as
// something else.
func IDRune(r rune) bool { return !Unsafe(r) }

// Validate reports whether c would survive ParseCall, so that envelopes
// built inside the broker are held to the same rules as those from outside.
func (c Call) Validate() error {
	data, err := json.Marshal(c)
	if err != nil {
		return fail(Malformed, "call does not encode")
	}
	_, err = ParseCall(data)
	return err
}

// MarshalJSON encodes the answer in its one valid shape (AppendJSON).
func (a Answer) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil) }

// Observed builds an OK answer to callID.
func Observed(callID string, observed json.RawMessage, b *Budget) Answer {
	return Answer{V: Version, CallID: callID, OK: true, Observed: observed, Budget: b}
}

// Refuse builds a refusal of callID under rule r with the rule's static
// text.
func Refuse(callID string, r Rule, b *Budget) Answer {
	return Answer{V: Version, CallID: callID, Refused: r, Why: r.Why(), Budget: b}
}

// UnreadableCallID stands in for the callId of a body that is not a call
// envelope, so that the refusal is itself a valid answer envelope.
const UnreadableCallID = "-"

// RefuseBody answers a body that failed ParseCall: it echoes the body's
// callId when one can be read and uses the rule and static detail of err.
func RefuseBody(data []byte, err error) Answer {
	id := UnreadableCallID
	if m, merr := Members(data); merr == nil {
		if s, ok := ident(m["callId"]); ok {
			id = s
		}
	}
	a := Refuse(id, RuleOf(err), nil)
	if e, ok := err.(*Error); ok {
		a.Why = e.Detail
	}
	return a
}
