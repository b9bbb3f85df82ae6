package relay

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/metrics"
)

// queueBox is an Outbox over a real Queue, as a socket is, that nobody
// reads: what the hub queued stays until the test pops it.
type queueBox struct {
	*Queue
	closed bool
}

func (b *queueBox) Close(contract.CloseCode, string) { b.closed = true }

func TestQueueNoticesOutsideMessageBound(t *testing.T) {
	q := NewQueue(4, 100)
	for range 2 {
		if !q.OfferShare([]byte("v")) {
			t.Fatal("view frame within the share refused")
		}
	}
	if q.OfferShare([]byte("v")) {
		t.Fatal("view frame past the share's messages accepted")
	}
	// Notices go past the message bound, within the byte bound.
	for range 10 {
		if !q.OfferNotice([]byte("nnnnnnnnn")) {
			t.Fatal("notice within the byte bound refused")
		}
	}
	if msgs, bytes := q.Len(); msgs != 12 || bytes != 92 {
		t.Fatalf("queue holds %d frames, %d bytes", msgs, bytes)
	}
	if q.OfferNotice([]byte("nnnnnnnnn")) {
		t.Fatal("notice past the byte bound accepted")
	}
	// The connection's own traffic keeps its message room: notices do not
	// count in it, bytes do.
	for range 2 {
		if !q.Offer([]byte("own")) {
			t.Fatal("own frames refused while notices fill no message room")
		}
	}
	if q.Offer([]byte("xxxxxxxxx")) {
		t.Fatal("own frame past the byte bound accepted")
	}
	// Popping releases the notices' count with their bytes.
	drain(q)
	if msgs, bytes := q.Len(); msgs != 0 || bytes != 0 || q.notices != 0 {
		t.Fatalf("drained queue holds %d frames, %d bytes, %d notices", msgs, bytes, q.notices)
	}
}

// drain pops everything queued (the host reads).
func drain(q interface{ Pop() ([]byte, bool) }) {
	for {
		if _, ok := q.Pop(); !ok {
			return
		}
	}
}

// churnHub is a hub with metrics whose host has a real queue of msgs
// frames and maxBytes bytes that it never reads.
func churnHub(t *testing.T, msgs, maxBytes int) (*Hub, *metrics.Registry, *queueBox) {
	t.Helper()
	reg := metrics.New()
	h := New(Options{SessionID: sid, MaxViews: 1024, Metrics: reg})
	hb := &queueBox{Queue: NewQueue(msgs, maxBytes)}
	if _, r, err := h.Join(contract.Host, hb); r != nil || err != nil {
		t.Fatalf("host join: %v %v", r, err)
	}
	return h, reg, hb
}

// TestViewChurnNeverDropsHost: views fill their share of the host's
// queue, then churn. Joins are refused host-busy and counted, the host
// stays, its queue stays within its bounds, and what the leaving views
// cause is queued outside the message bound.
func TestViewChurnNeverDropsHost(t *testing.T) {
	const msgs, maxBytes = 16, 1 << 20
	h, reg, hb := churnHub(t, msgs, maxBytes)
	// Views join and send requests the host takes and holds.
	var views []*peer
	for i := range 10 {
		b := &box{}
		m, _, err := h.Join(contract.View, b)
		if err != nil {
			t.Fatal(err)
		}
		v := &peer{t, h, m, b}
		for j := range 4 {
			if r := v.send("validateRequest", reqPayload("validateRequest", fmt.Sprintf("r%d-%d", i, j), "t"), 0); r != nil {
				t.Fatalf("request refused: %v", r)
			}
		}
		views = append(views, v)
		drain(hb)
	}
	// One of them fills the share with acks.
	for views[0].send("ack", map[string]any{}, 0) == nil {
	}
	if ms := views[0].box.take(t); ms[len(ms)-1].Payload["detail"] != contract.DetailBusy {
		t.Fatalf("view got %v", ms)
	}
	// Churn: every further join is refused while the share is full.
	for range 200 {
		if _, _, err := h.Join(contract.View, &box{}); !errors.Is(err, ErrHostBusy) {
			t.Fatalf("join past the share: %v, want ErrHostBusy", err)
		}
	}
	// Every view leaves: its cancel and viewState are queued past the
	// message bound.
	for _, v := range views {
		h.Leave(v.m)
	}
	if hb.closed || !h.Stats().Host {
		t.Fatal("view churn dropped the host")
	}
	n, bytes := hb.Len()
	if n <= msgs || bytes > maxBytes {
		t.Fatalf("host queue %d frames, %d bytes: want the notices past %d messages, within %d bytes", n, bytes, msgs, maxBytes)
	}
	if got := testutil.ToFloat64(reg.RelayHostBusy.WithLabelValues(metrics.HostBusyJoinRefused)); got < 200 {
		t.Fatalf("joins refused counted %v", got)
	}
	if got := testutil.ToFloat64(reg.RelayDroppedHosts); got != 0 {
		t.Fatalf("hosts dropped %v", got)
	}
	// The host reads: it gets every request, cancel and viewState, and a
	// new view joins again.
	var cancels, left int
	for {
		f, ok := hb.Pop()
		if !ok {
			break
		}
		switch s := string(f); {
		case strings.Contains(s, `"type":"validateCancel"`) && strings.Contains(s, `"view-disconnected"`):
			cancels++
		case strings.Contains(s, `"type":"viewState"`) && strings.Contains(s, `"disconnected"`):
			left++
		}
	}
	if cancels != 4*len(views) || left != len(views) {
		t.Fatalf("host got %d cancels and %d leaves for %d views", cancels, left, len(views))
	}
	if _, _, err := h.Join(contract.View, &box{}); err != nil {
		t.Fatalf("join after the host read: %v", err)
	}
}

// TestNoticeThatDoesNotFitIsDropped: a leaving view's cancel that would
// take the host's queue past its byte bound is not sent and is counted;
// the host stays.
func TestNoticeThatDoesNotFitIsDropped(t *testing.T) {
	const maxBytes = 64 << 10
	h, reg, hb := churnHub(t, 256, maxBytes)
	b := &box{}
	m, _, err := h.Join(contract.View, b)
	if err != nil {
		t.Fatal(err)
	}
	v := &peer{t, h, m, b}
	big := strings.Repeat("t", maxBytes/4)
	if r := v.send("validateRequest", reqPayload("validateRequest", "big", big), 0); r != nil {
		t.Fatalf("request refused: %v", r)
	}
	// The host's own traffic fills its queue short of the cancel.
	for hb.Offer([]byte(strings.Repeat("o", 1<<10))) {
	}
	h.Leave(v.m)
	if hb.closed || !h.Stats().Host {
		t.Fatal("a notice that did not fit dropped the host")
	}
	if _, bytes := hb.Len(); bytes > maxBytes {
		t.Fatalf("host queue %d bytes over %d", bytes, maxBytes)
	}
	if got := testutil.ToFloat64(reg.RelayHostBusy.WithLabelValues(metrics.HostBusyNoticeDropped)); got < 1 {
		t.Fatalf("dropped notices counted %v", got)
	}
	if st := h.Stats(); st.Pending != 0 || st.Views != 0 {
		t.Fatalf("the view's state outlived it: %+v", st)
	}
}

// TestHostDroppedForOwnTrafficIsCounted: a host whose own traffic fills
// its queue is dropped, and that is counted.
func TestHostDroppedForOwnTrafficIsCounted(t *testing.T) {
	h, reg, hb := churnHub(t, 2, 1<<20)
	host := &peer{t, h, h.host, nil}
	host.send("snapshot", map[string]any{"atHostSequence": 1, "state": map[string]any{}}, 0) // error: 2 of 2
	if hb.closed {
		t.Fatal("host dropped before its queue was full")
	}
	host.send("snapshot", map[string]any{"atHostSequence": 1, "state": map[string]any{}}, 0)
	if !hb.closed || h.Stats().Host {
		t.Fatal("slow host not dropped")
	}
	if got := testutil.ToFloat64(reg.RelayDroppedHosts); got != 1 {
		t.Fatalf("hosts dropped %v, want 1", got)
	}
	if got := testutil.ToFloat64(reg.RelayDropped); got != 0 {
		t.Fatalf("the host counted as a dropped view: %v", got)
	}
}
