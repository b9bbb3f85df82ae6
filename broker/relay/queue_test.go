package relay

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/airlock/airlock/broker/contract"
)

func frame(n int) []byte { return bytes.Repeat([]byte("x"), n) }

func wantLen(t *testing.T, q *Queue, msgs, size int) {
	t.Helper()
	if m, b := q.Len(); m != msgs || b != size {
		t.Fatalf("queue holds %d frames, %d bytes; want %d, %d", m, b, msgs, size)
	}
}

func TestQueueByteBoundExact(t *testing.T) {
	q := NewQueue(10, 100)
	if !q.Offer(frame(60)) || !q.Offer(frame(40)) {
		t.Fatal("frames filling the byte bound exactly refused")
	}
	wantLen(t, q, 2, 100)
	if q.Offer(frame(1)) {
		t.Fatal("one byte over the bound accepted")
	}
	wantLen(t, q, 2, 100) // a refused frame counts nothing
}

func TestQueueMessageBound(t *testing.T) {
	q := NewQueue(2, 100)
	for range 2 {
		if !q.Offer(frame(1)) {
			t.Fatal("frames up to the message bound refused")
		}
	}
	if q.Offer(frame(1)) {
		t.Fatal("third frame accepted with a bound of 2")
	}
	wantLen(t, q, 2, 2)
}

func TestQueueBytesReleasedOnPop(t *testing.T) {
	q := NewQueue(10, 100)
	q.Offer(frame(70))
	q.Offer(frame(30))
	if q.Offer(frame(30)) {
		t.Fatal("over the bound accepted")
	}
	f, ok := q.Pop()
	if !ok || len(f) != 70 {
		t.Fatalf("popped %d bytes, want the oldest (70)", len(f))
	}
	wantLen(t, q, 1, 30)
	if !q.Offer(frame(70)) {
		t.Fatal("the popped frame's bytes were not released")
	}
	wantLen(t, q, 2, 100)
	q.Pop()
	q.Pop()
	if _, ok := q.Pop(); ok {
		t.Fatal("pop from an empty queue")
	}
	wantLen(t, q, 0, 0)
}

func TestQueueBytesReleasedOnDiscard(t *testing.T) {
	q := NewQueue(10, 100)
	q.Offer(frame(100))
	q.Discard()
	wantLen(t, q, 0, 0)
	if !q.Offer(frame(100)) {
		t.Fatal("discarded bytes were not released")
	}
}

func TestQueueShareIsHalf(t *testing.T) {
	q := NewQueue(4, 100)
	if !q.OfferShare(frame(50)) {
		t.Fatal("a frame filling the share exactly refused")
	}
	if q.OfferShare(frame(1)) {
		t.Fatal("past half the bytes accepted as view traffic")
	}
	// The other half is still open to the broker's own frames.
	if !q.Offer(frame(50)) {
		t.Fatal("the reserved half refused the broker's frame")
	}
	q.Pop()
	q.Pop()
	q.OfferShare(frame(1))
	q.OfferShare(frame(1))
	if q.OfferShare(frame(1)) {
		t.Fatal("past half the messages accepted as view traffic")
	}
}

// The hub's view of the bounds: a view's requests in flight.

func TestRequestsPerViewBound(t *testing.T) {
	h := New(Options{SessionID: sid, MaxViews: 8, MaxRequestsPerView: 3})
	host := join(t, h, contract.Host, 0)
	a := join(t, h, contract.View, 0)
	b := join(t, h, contract.View, 0)
	for _, p := range []*peer{host, a, b} {
		p.box.take(t)
	}
	for i := range 3 { // exactly the bound is fine
		if r := a.send("validateRequest", reqPayload("validateRequest", fmt.Sprint("a", i), "t"), 0); r != nil {
			t.Fatalf("request %d refused: %v", i+1, r)
		}
	}
	host.got("validateRequest", "validateRequest", "validateRequest")
	a.send("validateRequest", reqPayload("validateRequest", "a3", "t"), 0)
	a.refused(contract.DetailBusy)
	host.got() // the refused request never reached the host
	// Per view: b is not held back by a.
	b.send("validateRequest", reqPayload("validateRequest", "b0", "t"), 0)
	host.got("validateRequest")
	// A result, a cancel and the host leaving each free slots.
	host.send("validateResult", reqPayload("validateResult", "a0", "t"), 0)
	a.got("validateResult")
	a.send("validateRequest", reqPayload("validateRequest", "a3", "t"), 0)
	host.got("validateRequest")
	a.send("validateRequest", reqPayload("validateRequest", "a4", "t"), 0)
	a.refused(contract.DetailBusy)
	a.send("validateCancel", reqPayload("validateCancel", "a1", "t"), 0)
	host.got("validateCancel")
	a.send("validateRequest", reqPayload("validateRequest", "a4", "t"), 0)
	host.got("validateRequest")
	h.Leave(host.m)
	host2 := join(t, h, contract.Host, 0)
	host2.box.take(t)
	a.box.take(t)
	for i := range 3 {
		a.send("validateRequest", reqPayload("validateRequest", fmt.Sprint("n", i), "t"), 0)
	}
	host2.got("validateRequest", "validateRequest", "validateRequest")
	if len(a.box.take(t)) != 0 {
		t.Fatal("requests refused after the host left and freed every slot")
	}
}

func TestViewLeaveFreesItsRequests(t *testing.T) {
	h := New(Options{SessionID: sid, MaxViews: 8, MaxRequestsPerView: 1})
	host := join(t, h, contract.Host, 0)
	a := join(t, h, contract.View, 0)
	a.send("validateRequest", reqPayload("validateRequest", "a0", "t"), 0)
	if st := h.Stats(); st.Pending != 1 {
		t.Fatalf("%+v", st)
	}
	h.Leave(a.m)
	if st := h.Stats(); st.Pending != 0 {
		t.Fatalf("a view's requests outlived it: %+v", st)
	}
	host.box.take(t)
}

func TestDefaultRequestsPerView(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 0)
	a := join(t, h, contract.View, 0)
	a.box.take(t)
	for i := range DefaultMaxRequestsPerView {
		a.send("validateRequest", reqPayload("validateRequest", fmt.Sprint("r", i), "t"), 0)
	}
	if len(a.box.take(t)) != 0 {
		t.Fatalf("refused within the default bound of %d", DefaultMaxRequestsPerView)
	}
	a.send("validateRequest", reqPayload("validateRequest", "over", "t"), 0)
	a.refused(contract.DetailBusy)
	host.box.take(t)
}

// TestQueueSpareHoldsNoFrame checks that the backing array a queue keeps
// when empty never keeps a frame alive after Pop or Discard, whether the
// queue stayed within it or grew past it.
func TestQueueSpareHoldsNoFrame(t *testing.T) {
	q := NewQueue(64, 1<<20)
	empty := func(when string) {
		for i, e := range q.spare[:cap(q.spare)] {
			if e.frame != nil {
				t.Fatalf("%s: spare slot %d holds a frame", when, i)
			}
		}
	}
	for _, n := range []int{1, 3, spareFrames, spareFrames + 1, 20} {
		for range n {
			if !q.Offer([]byte("frame")) {
				t.Fatal("refused")
			}
		}
		for range n {
			if _, ok := q.Pop(); !ok {
				t.Fatal("empty too soon")
			}
		}
		empty("after pops")
		for range n {
			q.Offer([]byte("frame"))
		}
		q.Discard()
		empty("after discard")
		if m, b := q.Len(); m != 0 || b != 0 {
			t.Fatalf("after discard: %d frames, %d bytes", m, b)
		}
	}
}

// TestQueuePopMore tells whether frames remain after the one taken.
func TestQueuePopMore(t *testing.T) {
	q := NewQueue(4, 100)
	if _, ok, more := q.PopMore(); ok || more {
		t.Fatal("an empty queue popped something")
	}
	q.Offer(frame(1))
	q.Offer(frame(2))
	if f, ok, more := q.PopMore(); !ok || len(f) != 1 || !more {
		t.Fatalf("first: %d bytes, ok %v, more %v", len(f), ok, more)
	}
	if f, ok, more := q.PopMore(); !ok || len(f) != 2 || more {
		t.Fatalf("last: %d bytes, ok %v, more %v", len(f), ok, more)
	}
}
