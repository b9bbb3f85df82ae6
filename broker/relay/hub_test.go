package relay

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker/contract"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sid = "ws_hub"

// box is an in-memory Outbox; limit 0 means unbounded.
type box struct {
	mu     sync.Mutex
	frames [][]byte
	limit  int
	closed bool
	code   contract.CloseCode
	reason string
}

func (b *box) Offer(f []byte) bool { return b.push(f, b.limit) }

// OfferShare keeps half the limit free, as Queue.OfferShare does.
func (b *box) OfferShare(f []byte) bool { return b.push(f, b.limit/2) }

// OfferNotice ignores the message limit, as Queue.OfferNotice does (the
// box has no byte bound).
func (b *box) OfferNotice(f []byte) bool { return b.push(f, -1) }

func (b *box) push(f []byte, limit int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return true
	}
	if b.limit > 0 && limit >= 0 && len(b.frames) >= limit {
		return false
	}
	b.frames = append(b.frames, f)
	return true
}

func (b *box) Close(code contract.CloseCode, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed, b.code, b.reason = true, code, reason
	}
}

// msg is a received frame, decoded.
type msg struct {
	Type    string         `json:"type"`
	Payload map[string]any `json:"payload"`
	Seq     int64          `json:"hostSequence"`
}

// take returns and forgets what the box received.
func (b *box) take(t *testing.T) []msg {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []msg
	for _, f := range b.frames {
		var m msg
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatalf("undecodable frame %q", f)
		}
		out = append(out, m)
	}
	b.frames = nil
	return out
}

func types(ms []msg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Type)
	}
	return out
}

// peer is a joined member with its box.
type peer struct {
	t   *testing.T
	h   *Hub
	m   *Member
	box *box
}

func newHub(propose bool) *Hub {
	return New(Options{SessionID: sid, Capabilities: contract.Capabilities{CanProposeSourceEdits: propose}, MaxViews: 8})
}

func join(t *testing.T, h *Hub, role contract.Role, limit int) *peer {
	t.Helper()
	b := &box{limit: limit}
	m, r, err := h.Join(role, b)
	if r != nil || err != nil {
		t.Fatalf("join %v: %v %v", role, r, err)
	}
	return &peer{t, h, m, b}
}

// send validates a frame as the contract would for this peer and hands it
// to the hub; it returns the refusal, if any.
func (p *peer) send(typ string, payload any, seq int64) *contract.Refusal {
	p.t.Helper()
	env := map[string]any{"protocolVersion": 1, "workspaceSessionId": sid, "type": typ, "payload": payload}
	if seq != 0 {
		env["hostSequence"] = seq
	}
	raw, _ := json.Marshal(env)
	ctx := contract.Context{Role: p.m.role, SessionID: sid, ViewID: p.m.id, CanPropose: p.h.opts.Capabilities.CanProposeSourceEdits}
	m, r := contract.Validate(contract.Frame{Data: raw}, ctx)
	if r != nil {
		p.t.Fatalf("contract refused %s: %v", typ, r)
	}
	r, err := p.h.Handle(p.m, m)
	if err != nil {
		p.t.Fatalf("handle %s: %v", typ, err)
	}
	return r
}

// refused asserts the peer got exactly one error with detail.
func (p *peer) refused(detail string) {
	p.t.Helper()
	got := p.box.take(p.t)
	if len(got) != 1 || got[0].Type != "error" || got[0].Payload["detail"] != detail {
		p.t.Fatalf("want one error %s, got %v", detail, got)
	}
}

// got asserts the peer received exactly these types.
func (p *peer) got(want ...string) []msg {
	p.t.Helper()
	ms := p.box.take(p.t)
	if !slices.Equal(types(ms), want) {
		p.t.Fatalf("received %v, want %v", types(ms), want)
	}
	return ms
}

func TestJoinNotifications(t *testing.T) {
	h := newHub(false)
	v1 := join(t, h, contract.View, 0)
	ms := v1.got("connected", "connectionState")
	if ms[0].Payload["hostConnected"] != false || ms[0].Payload["hostEpoch"] != 0.0 || ms[0].Payload["viewId"] != v1.m.id {
		t.Fatalf("view connected %v", ms[0].Payload)
	}
	if ms[1].Payload["state"] != "disconnected" {
		t.Fatalf("view before host: %v", ms[1].Payload)
	}
	host := join(t, h, contract.Host, 0)
	ms = host.got("connected")
	if ms[0].Payload["role"] != "host" || ms[0].Payload["hostEpoch"] != 1.0 || len(ms[0].Payload["views"].([]any)) != 1 {
		t.Fatalf("host connected %v", ms[0].Payload)
	}
	if ms := v1.got("connectionState"); ms[0].Payload["state"] != "connected" || ms[0].Payload["hostEpoch"] != 1.0 {
		t.Fatalf("view told %v", ms[0].Payload)
	}
	v2 := join(t, h, contract.View, 0)
	if ms := v2.got("connected", "connectionState"); ms[0].Payload["hostConnected"] != true || ms[1].Payload["state"] != "connected" {
		t.Fatalf("late view %v", ms)
	}
	if ms := host.got("viewState"); ms[0].Payload["viewId"] != v2.m.id || ms[0].Payload["state"] != "connected" {
		t.Fatalf("host told %v", ms[0].Payload)
	}
	v1.got()
}

func TestSecondHostRefused(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 0)
	view := join(t, h, contract.View, 0)
	host.box.take(t)
	view.box.take(t)
	m, r, err := h.Join(contract.Host, &box{})
	if m != nil || err != nil || r == nil || r.Code != contract.HostAlreadyConnected {
		t.Fatalf("second host: %v %v %v", m, r, err)
	}
	host.got()
	view.got()
	if r := host.send("focusNode", map[string]any{}, 1); r != nil {
		t.Fatalf("first host after a refused second: %v", r)
	}
	view.got("focusNode")
}

func TestOrderingPerEpoch(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 0)
	v := join(t, h, contract.View, 0)
	host.box.take(t)
	v.box.take(t)
	if r := host.send("focusNode", map[string]any{"n": 1}, 5); r != nil {
		t.Fatal(r)
	}
	v.got("focusNode")
	host.send("projection", map[string]any{}, 5)
	host.refused(contract.DetailSequence)
	host.send("syncState", map[string]any{}, 4)
	host.refused(contract.DetailSequence)
	v.got()                               // never relayed
	host.send("ack", map[string]any{}, 0) // unordered: no sequence involved
	host.send("staleState", map[string]any{}, 6)
	if ms := v.got("ack", "staleState"); ms[1].Seq != 6 {
		t.Fatalf("seq %d", ms[1].Seq)
	}
	h.Leave(host.m)
	if ms := v.got("connectionState"); ms[0].Payload["state"] != "disconnected" || ms[0].Payload["hostEpoch"] != 1.0 {
		t.Fatalf("host leave %v", ms[0].Payload)
	}
	host2 := join(t, h, contract.Host, 0)
	if ms := host2.got("connected"); ms[0].Payload["hostEpoch"] != 2.0 {
		t.Fatalf("epoch %v", ms[0].Payload)
	}
	v.got("connectionState")
	if r := host2.send("focusNode", map[string]any{}, 1); r != nil {
		t.Fatalf("new epoch must restart ordering: %v", r)
	}
	v.got("focusNode")
}

func TestViewTrafficOnlyToHost(t *testing.T) {
	h := newHub(false)
	a := join(t, h, contract.View, 0)
	b := join(t, h, contract.View, 0)
	a.box.take(t)
	b.box.take(t)
	a.send("revealNode", map[string]any{"nodeId": "n"}, 0)
	a.refused(contract.DetailNoHost)
	host := join(t, h, contract.Host, 0)
	host.box.take(t)
	a.box.take(t)
	b.box.take(t)
	for _, typ := range []string{"revealNode", "ack", "error"} {
		a.send(typ, map[string]any{"nodeId": "n", "message": "m"}, 0)
	}
	host.got("revealNode", "ack", "error")
	a.got()
	b.got()
	host.send("error", map[string]any{"message": "lost"}, 0)
	a.got("error")
	b.got("error")
}

func TestSnapshotRouting(t *testing.T) {
	h := newHub(false)
	a := join(t, h, contract.View, 0)
	b := join(t, h, contract.View, 0)
	c := join(t, h, contract.View, 0)
	// Asked with no host: queued; c leaves before the host comes.
	b.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	c.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	a.send("snapshotRequest", map[string]any{"lastHostSequence": 3}, 0)
	a.send("snapshotRequest", map[string]any{"lastHostSequence": 4}, 0) // replaces a's older ask
	h.Leave(c.m)
	for _, p := range []*peer{a, b} {
		p.box.take(t)
	}
	host := join(t, h, contract.Host, 0)
	ms := host.got("connected", "snapshotRequest", "snapshotRequest")
	if ms[1].Payload["lastHostSequence"] != nil || ms[2].Payload["lastHostSequence"] != 4.0 {
		t.Fatalf("flushed oldest first, newest per view: %v", ms)
	}
	a.box.take(t)
	b.box.take(t)
	snap := map[string]any{"atHostSequence": 0, "state": map[string]any{}}
	host.send("snapshot", snap, 0)
	b.got("snapshot")
	a.got()
	host.send("snapshot", snap, 0)
	a.got("snapshot")
	host.send("snapshot", snap, 0)
	host.refused(contract.DetailNoPendingSnapshot)
	// An asker that left is skipped.
	b.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	a.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	host.got("snapshotRequest", "snapshotRequest")
	h.Leave(b.m)
	host.got("viewState")
	host.send("snapshot", snap, 0)
	a.got("snapshot")
}

// families: request, cancel, progress (or ""), result.
var families = [][4]string{
	{"sourceEditRequest", "sourceEditCancel", "sourceEditReview", "sourceEditResult"},
	{"validateRequest", "validateCancel", "", "validateResult"},
	{"captureInspectRequest", "captureInspectCancel", "", "captureInspectResult"},
	{"exportRequest", "exportCancel", "", "exportResult"},
	{"graphPublishRequest", "graphPublishCancel", "graphPublishState", "graphPublishResult"},
}

func reqPayload(typ, id string, target any) map[string]any {
	p := map[string]any{"requestId": id, "target": target}
	switch typ {
	case "graphPublishRequest":
		p["graphGzipBase64"] = "H4sIAAAAAAAA/wMAAAAAAAAAAAA="
	case "graphPublishState":
		p["phase"] = "uploading"
	case "graphPublishResult":
		p["status"] = "failed"
	}
	return p
}

func setup(t *testing.T) (h *Hub, host, a, b *peer) {
	h = newHub(true)
	host = join(t, h, contract.Host, 0)
	a = join(t, h, contract.View, 0)
	b = join(t, h, contract.View, 0)
	for _, p := range []*peer{host, a, b} {
		p.box.take(t)
	}
	return
}

func TestRequestRouting(t *testing.T) {
	for _, fam := range families {
		t.Run(fam[0], func(t *testing.T) {
			h, host, a, b := setup(t)
			_ = h
			target := map[string]any{"file": "x.py"}
			a.send(fam[0], reqPayload(fam[0], "r1", target), 0)
			host.got(fam[0])
			a.send(fam[0], reqPayload(fam[0], "r1", target), 0)
			a.refused(contract.DetailDuplicateRequest)
			b.send(fam[0], reqPayload(fam[0], "r1", target), 0)
			b.refused(contract.DetailDuplicateRequest)
			b.send(fam[1], reqPayload(fam[1], "r1", target), 0)
			b.refused(contract.DetailNotOwner)
			host.got()
			other := families[0]
			if other[0] == fam[0] {
				other = families[1]
			}
			host.send(other[3], reqPayload(other[3], "r1", target), 0)
			host.refused(contract.DetailKindMismatch)
			a.send(other[1], reqPayload(other[1], "r1", target), 0)
			a.refused(contract.DetailKindMismatch)
			host.send(fam[3], reqPayload(fam[3], "r1", "another"), 0)
			host.refused(contract.DetailTargetMismatch)
			if fam[2] != "" {
				host.send(fam[2], reqPayload(fam[2], "r1", target), 0)
				a.got(fam[2])
				b.got()
			}
			host.send(fam[3], reqPayload(fam[3], "r1", target), 0)
			a.got(fam[3])
			b.got()
			host.send(fam[3], reqPayload(fam[3], "r1", target), 0)
			host.refused(contract.DetailUnknownRequest)
			host.send(fam[3], reqPayload(fam[3], "never", target), 0)
			host.refused(contract.DetailUnknownRequest)
			a.got()
		})
	}
}

func TestCancelledRequestsLateRepliesDropped(t *testing.T) {
	for _, fam := range families {
		t.Run(fam[0], func(t *testing.T) {
			_, host, a, _ := setup(t)
			a.send(fam[0], reqPayload(fam[0], "r1", "t"), 0)
			a.send(fam[1], reqPayload(fam[1], "r1", "t"), 0)
			host.got(fam[0], fam[1])
			if r := host.send(fam[3], reqPayload(fam[3], "r1", "t"), 0); r != nil {
				t.Fatalf("late reply refused: %v", r)
			}
			host.got()
			a.got()
			a.send(fam[1], reqPayload(fam[1], "r1", "t"), 0)
			a.refused(contract.DetailUnknownRequest)
		})
	}
}

func TestViewLeaveSynthesizesCancels(t *testing.T) {
	h, host, a, b := setup(t)
	a.send("validateRequest", reqPayload("validateRequest", "v1", "t1"), 0)
	a.send("exportRequest", reqPayload("exportRequest", "e1", map[string]any{"k": 1}), 0)
	a.send("candidateRequest", map[string]any{"requestId": "c1", "viewId": a.m.id}, 0)
	a.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	b.send("validateRequest", reqPayload("validateRequest", "v2", "t2"), 0)
	host.box.take(t)
	h.Leave(a.m)
	h.Leave(a.m) // idempotent
	ms := host.box.take(t)
	got := map[string]map[string]any{}
	for _, m := range ms {
		got[m.Type] = m.Payload
	}
	if len(ms) != 3 || got["validateCancel"]["requestId"] != "v1" || got["exportCancel"]["requestId"] != "e1" ||
		got["validateCancel"]["reason"] != contract.CancelReasonViewDisconnected || got["viewState"]["state"] != "disconnected" ||
		got["exportCancel"]["target"].(map[string]any)["k"] != 1.0 {
		t.Fatalf("host after view left: %v", ms)
	}
	if ms[len(ms)-1].Type != "viewState" {
		t.Fatalf("viewState must follow the cancels: %v", types(ms))
	}
	for _, late := range [][2]string{{"validateResult", "v1"}, {"exportResult", "e1"}} {
		if r := host.send(late[0], reqPayload(late[0], late[1], "t1"), 0); r != nil {
			t.Fatalf("late %s refused: %v", late[0], r)
		}
	}
	if r := host.send("candidateResult", map[string]any{"requestId": "c1", "viewId": a.m.id}, 0); r != nil {
		t.Fatalf("late candidate refused: %v", r)
	}
	host.send("snapshot", map[string]any{"atHostSequence": 0, "state": map[string]any{}}, 0)
	host.refused(contract.DetailNoPendingSnapshot)
	b.got()
	host.send("validateResult", reqPayload("validateResult", "v2", "t2"), 0)
	b.got("validateResult")
}

func TestHostLeaveClearsRequests(t *testing.T) {
	h, host, a, b := setup(t)
	a.send("validateRequest", reqPayload("validateRequest", "v1", "t"), 0)
	a.send("validateCancel", reqPayload("validateCancel", "v1", "t"), 0)
	b.send("exportRequest", reqPayload("exportRequest", "e1", "t"), 0)
	h.Leave(host.m)
	a.got("connectionState")
	b.got("connectionState")
	if st := h.Stats(); st.Pending != 0 || st.Retired != 0 || st.Host {
		t.Fatalf("after host left: %+v", st)
	}
	b.send("exportRequest", reqPayload("exportRequest", "e2", "t"), 0)
	b.refused(contract.DetailNoHost)
	host2 := join(t, h, contract.Host, 0)
	host2.box.take(t)
	a.box.take(t)
	b.box.take(t)
	host2.send("exportResult", reqPayload("exportResult", "e1", "t"), 0)
	host2.refused(contract.DetailUnknownRequest)
	b.send("exportRequest", reqPayload("exportRequest", "e1", "t"), 0) // the id is free again
	host2.got("exportRequest")
}

func TestCandidateRouting(t *testing.T) {
	_, host, a, b := setup(t)
	a.send("candidateRequest", map[string]any{"requestId": "c1", "viewId": a.m.id}, 0)
	host.got("candidateRequest")
	host.send("candidateResult", map[string]any{"requestId": "c1", "viewId": b.m.id}, 0)
	host.refused(contract.DetailViewMismatch)
	host.send("validateResult", reqPayload("validateResult", "c1", "t"), 0)
	host.refused(contract.DetailKindMismatch)
	host.send("candidateResult", map[string]any{"requestId": "c1", "viewId": a.m.id, "items": []int{1}}, 0)
	a.got("candidateResult")
	b.got()
}

func TestSlowViewDropped(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 0)
	slow := join(t, h, contract.View, 4)
	fast := join(t, h, contract.View, 0)
	slow.box.mu.Lock()
	slow.box.frames = nil // "delivered" the handshake frames
	slow.box.mu.Unlock()
	host.box.take(t)
	fast.box.take(t)
	for i := range 10 {
		if r := host.send("focusNode", map[string]any{"i": i}, int64(i+1)); r != nil {
			t.Fatal(r)
		}
	}
	if len(fast.got("focusNode", "focusNode", "focusNode", "focusNode", "focusNode", "focusNode", "focusNode", "focusNode", "focusNode", "focusNode")) != 10 {
		t.Fatal()
	}
	if !slow.box.closed || slow.box.code != contract.CloseTryAgainLater || slow.box.reason != contract.ReasonSlowConsumer {
		t.Fatalf("slow view not closed: %+v", slow.box)
	}
	if ms := host.got("viewState"); ms[0].Payload["viewId"] != slow.m.id || ms[0].Payload["state"] != "disconnected" {
		t.Fatalf("host told %v", ms)
	}
	if _, err := h.Handle(slow.m, &contract.Message{Type: "ack"}); !errors.Is(err, ErrGone) {
		t.Fatalf("dropped view still relays: %v", err)
	}
	if st := h.Stats(); st.Views != 1 {
		t.Fatalf("views %d", st.Views)
	}
}

func TestViewTrafficNeverDropsHost(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 4)
	v := join(t, h, contract.View, 0)
	v.box.take(t)
	// connected and viewState hold 2 of the host's 4 slots: half, the
	// share open to view traffic, so every view frame is refused busy.
	v.send("revealNode", map[string]any{"nodeId": "n"}, 0)
	v.refused(contract.DetailBusy)
	v.send("validateRequest", reqPayload("validateRequest", "r1", "t"), 0)
	v.refused(contract.DetailBusy)
	v.send("snapshotRequest", map[string]any{"lastHostSequence": nil}, 0)
	v.refused(contract.DetailBusy)
	if host.box.closed {
		t.Fatal("view traffic dropped the host")
	}
	if st := h.Stats(); !st.Host || st.Pending != 0 || st.Asks != 0 {
		t.Fatalf("refused frames left state: %+v", st)
	}
	// The host reads: view traffic flows again, and the request refused
	// busy was never registered, so its id is free.
	host.got("connected", "viewState")
	v.send("validateRequest", reqPayload("validateRequest", "r1", "t"), 0)
	host.got("validateRequest")
	if len(v.box.take(t)) != 0 {
		t.Fatal("accepted request answered")
	}
}

func TestSlowHostDroppedByOwnTraffic(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 4)
	v := join(t, h, contract.View, 0)
	v.box.take(t)
	// connected and viewState take half the host's queue of 4; the
	// broker's answers to the host's own bad frames fill the rest, and
	// the third does not fit: a host that reads nothing of what it asked
	// for is a slow consumer like any other.
	for range 3 {
		host.send("snapshot", map[string]any{"atHostSequence": 1, "state": map[string]any{}}, 0)
	}
	if !host.box.closed || host.box.code != contract.CloseTryAgainLater {
		t.Fatal("slow host not closed")
	}
	if ms := v.got("connectionState"); ms[0].Payload["state"] != "disconnected" {
		t.Fatalf("view told %v", ms)
	}
}

func TestCloseAndMaxViews(t *testing.T) {
	h := New(Options{SessionID: sid, MaxViews: 2})
	host := join(t, h, contract.Host, 0)
	a := join(t, h, contract.View, 0)
	join(t, h, contract.View, 0)
	if _, _, err := h.Join(contract.View, &box{}); !errors.Is(err, ErrTooManyViews) {
		t.Fatalf("third view: %v", err)
	}
	h.Close(4402, "CREDENTIAL_EXPIRED")
	for _, p := range []*peer{host, a} {
		if !p.box.closed || p.box.code != 4402 || p.box.reason != "CREDENTIAL_EXPIRED" {
			t.Fatalf("not closed 4402: %+v", p.box)
		}
	}
	if _, _, err := h.Join(contract.View, &box{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("join after close: %v", err)
	}
	if _, err := h.Handle(host.m, &contract.Message{}); !errors.Is(err, ErrGone) {
		t.Fatalf("handle after close: %v", err)
	}
	h.Leave(a.m)
	if st := h.Stats(); st.Views != 0 || st.Host || !st.Closed {
		t.Fatalf("%+v", st)
	}
}
