package relay

import "sync"

// Queue is a connection's outbound queue, bounded in messages and in bytes
// (local.outbound_queue, local.outbound_queue_bytes). A message bound alone
// lets 256 frames of 16 MiB pile up behind a peer that does not read; the
// byte bound caps what one connection can make the broker hold. A frame's
// bytes count from Offer until the writer takes it (Pop) or the queue is
// discarded, so a connection holds at most its queue plus the one frame
// being written.
//
// It never blocks: Offer answers at once whether the frame fits.
type Queue struct {
	maxMsgs, maxBytes int

	mu      sync.Mutex
	frames  []queued // oldest first
	spare   []queued // a small backing array frames restarts on when empty (see Pop)
	bytes   int
	notices int // frames queued by OfferNotice, outside the message bound
}

// queued is one frame and whether it is a notice (see OfferNotice).
type queued struct {
	frame  []byte
	notice bool
}

// NewQueue makes an empty queue with the given bounds.
func NewQueue(maxMsgs, maxBytes int) *Queue {
	return &Queue{maxMsgs: maxMsgs, maxBytes: maxBytes}
}

// Offer queues frame when the queue, with it, stays within its bounds; a
// frame that fills the queue exactly fits. False queues nothing.
func (q *Queue) Offer(frame []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.push(frame, len(q.frames)-q.notices < q.maxMsgs && q.fits(frame, q.maxBytes), false)
}

// OfferShare queues frame only when the queue, with it, stays within half
// its bounds: the share open to view traffic on the host's queue. The
// other half stays free for what the broker itself must tell the host
// (viewState, the cancels of a view that left), so views cannot fill it.
// Notices count in the share's messages, so views cannot add traffic
// while their notices are queued.
func (q *Queue) OfferShare(frame []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.push(frame, len(q.frames) < q.maxMsgs/2 && q.fits(frame, q.maxBytes/2), false)
}

// OfferNotice queues a small frame the broker makes because of a view
// (the viewState and synthesized cancels of a view that left) within the
// queue's byte bound but outside its message bound: their number is
// bounded by the views that joined while the queue was within the share
// (see Hub.Join), not by the queue, so they must not take the message
// room of the connection's own traffic. False queues nothing.
func (q *Queue) OfferNotice(frame []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.push(frame, q.fits(frame, q.maxBytes), true)
}

func (q *Queue) fits(frame []byte, maxBytes int) bool { return q.bytes+len(frame) <= maxBytes }

// push queues frame when ok; q.mu is held.
func (q *Queue) push(frame []byte, ok, notice bool) bool {
	if !ok {
		return false
	}
	if cap(q.frames) == 0 {
		if q.spare == nil {
			q.spare = make([]queued, 0, spareFrames)
		}
		q.frames = q.spare[:0]
	}
	grow := len(q.frames) == cap(q.frames)
	q.frames = append(q.frames, queued{frame, notice})
	if grow {
		// The frames moved to a new array: the spare must not keep
		// them alive after they are popped from there.
		clear(q.spare[:cap(q.spare)])
	}
	q.bytes += len(frame)
	if notice {
		q.notices++
	}
	return true
}

// Pop takes the oldest frame and releases its bytes; false when empty.
func (q *Queue) Pop() ([]byte, bool) {
	f, ok, _ := q.PopMore()
	return f, ok
}

// PopMore is Pop that also tells whether frames remain, so a writer that
// empties the queue stops popping without locking it once more to find
// it empty.
func (q *Queue) PopMore() (frame []byte, ok, more bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.frames) == 0 {
		return nil, false, false
	}
	f := q.frames[0]
	q.frames[0] = queued{} // let the frame go with the writer, not the backing array
	q.frames = q.frames[1:]
	q.bytes -= len(f.frame)
	if f.notice {
		q.notices--
	}
	if len(q.frames) == 0 {
		// Drop a grown backing array, but restart on the small spare
		// one: a queue that empties after every frame or two (the usual
		// case) then allocates nothing per frame.
		q.frames = q.spare[:0]
	}
	return f.frame, true, len(q.frames) > 0
}

// Discard drops every queued frame and releases their bytes (a connection
// closed without flushing).
func (q *Queue) Discard() {
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.frames)
	clear(q.spare[:cap(q.spare)])
	q.frames, q.bytes, q.notices = q.spare[:0], 0, 0
}

// spareFrames is the capacity a queue keeps when empty: 128 bytes a
// connection, against an allocation per frame without it.
const spareFrames = 4

// Len reports the frames and bytes queued.
func (q *Queue) Len() (msgs, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames), q.bytes
}
