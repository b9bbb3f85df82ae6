package contract

// Role is who is at the other end of a socket.
type Role uint8

// The two client roles. The broker itself is not a role: the types it owns
// have no sender.
const (
	Host Role = 1 << iota
	View
)

// String names the role as connected spells it on the wire (PROTOCOL
// section 4.3), and for logs and metric labels.
func (r Role) String() string {
	switch r {
	case Host:
		return "host"
	case View:
		return "view"
	}
	return "none"
}

// Family groups a request with its cancel and its replies. Replies of one
// family can never settle a request of another.
type Family uint8

// The request families of PROTOCOL section 4.
const (
	NoFamily Family = iota
	SourceEdits
	Validations
	CaptureInspections
	Exports
	GraphPublishes
	Candidates
)

// Kind is the part a type plays in its family.
type Kind uint8

// Kinds of family members. Progress keeps the request open; Result ends it.
const (
	NotRequest Kind = iota
	Request
	Cancel
	Progress
	Result
)

// Spec is the frozen schema of one message type: who may send it, whether
// it is ordered host state, its place in a request family, and its payload
// check. The specs table is the only place these facts live.
type Spec struct {
	From    Role // 0: broker-owned, no client may send it
	Ordered bool // host state that must carry hostSequence
	Family  Family
	Kind    Kind
	// check validates the payload beyond "is an object"; nil accepts any
	// object.
	check func(p payload, c Context) *Refusal
}

// specs is the contract: every message type of PROTOCOL section 4 and
// nothing else. Keep it in step with PROTOCOL section 4.5; the golden frames in
// testdata/relay exercise each entry.
var specs = map[string]Spec{
	"hello":           {From: Host | View},
	"connected":       {},
	"connectionState": {},
	"viewState":       {},
	"error":           {From: Host | View, check: checkRelayedError},

	"activeTarget": {From: Host, Ordered: true},
	"projection":   {From: Host, Ordered: true},
	"syncState":    {From: Host, Ordered: true},
	"staleState":   {From: Host, Ordered: true},
	"focusNode":    {From: Host, Ordered: true},
	"ack":          {From: Host | View},

	"snapshotRequest": {From: View, check: checkSnapshotRequest},
	"snapshot":        {From: Host, check: checkSnapshot},
	"revealNode":      {From: View, check: checkRevealNode},

	"sourceEditRequest": {From: View, Family: SourceEdits, Kind: Request, check: checkSourceEditRequest},
	"sourceEditCancel":  {From: View, Family: SourceEdits, Kind: Cancel, check: checkSourceEditRequest},
	"sourceEditReview":  {From: Host, Family: SourceEdits, Kind: Progress, check: checkTargeted},
	"sourceEditResult":  {From: Host, Family: SourceEdits, Kind: Result, check: checkTargeted},

	"validateRequest": {From: View, Family: Validations, Kind: Request, check: checkTargeted},
	"validateCancel":  {From: View, Family: Validations, Kind: Cancel, check: checkTargeted},
	"validateResult":  {From: Host, Family: Validations, Kind: Result, check: checkTargeted},

	"captureInspectRequest": {From: View, Family: CaptureInspections, Kind: Request, check: checkTargeted},
	"captureInspectCancel":  {From: View, Family: CaptureInspections, Kind: Cancel, check: checkTargeted},
	"captureInspectResult":  {From: Host, Family: CaptureInspections, Kind: Result, check: checkBulkResult},

	"exportRequest": {From: View, Family: Exports, Kind: Request, check: checkTargeted},
	"exportCancel":  {From: View, Family: Exports, Kind: Cancel, check: checkTargeted},
	"exportResult":  {From: Host, Family: Exports, Kind: Result, check: checkBulkResult},

	"graphPublishRequest": {From: View, Family: GraphPublishes, Kind: Request, check: checkGraphPublishRequest},
	"graphPublishCancel":  {From: View, Family: GraphPublishes, Kind: Cancel, check: checkTargeted},
	"graphPublishState":   {From: Host, Family: GraphPublishes, Kind: Progress, check: checkGraphPublishState},
	"graphPublishResult":  {From: Host, Family: GraphPublishes, Kind: Result, check: checkGraphPublishResult},

	"candidateRequest": {From: View, Family: Candidates, Kind: Request, check: checkCandidateRequest},
	"candidateResult":  {From: Host, Family: Candidates, Kind: Result, check: checkCandidateResult},
}

// cancelType is the cancel message of each family that has one; the relay
// synthesizes it when a view leaves with requests in flight. Candidate has
// none: its requests are simply abandoned.
var cancelType = map[Family]string{
	SourceEdits:        "sourceEditCancel",
	Validations:        "validateCancel",
	CaptureInspections: "captureInspectCancel",
	Exports:            "exportCancel",
	GraphPublishes:     "graphPublishCancel",
}

// CancelReasonViewDisconnected is the reason member of a cancel the broker
// synthesizes because the requesting view left.
const CancelReasonViewDisconnected = "view-disconnected"

// Lookup returns the frozen spec of typ.
func Lookup(typ string) (Spec, bool) {
	s, ok := specs[typ]
	return s, ok
}

// Known reports whether typ is a type of the contract; metric labels use it
// to stay inside a closed set.
func Known(typ string) bool {
	_, ok := specs[typ]
	return ok
}

// CancelOf is the cancel type of a family, when it has one.
func CancelOf(f Family) (string, bool) {
	t, ok := cancelType[f]
	return t, ok
}

// Types lists every type of the contract, for tests and documentation.
func Types() []string {
	out := make([]string, 0, len(specs))
	for t := range specs {
		out = append(out, t)
	}
	return out
}
