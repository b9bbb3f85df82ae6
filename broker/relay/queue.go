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
	ready             chan struct{} // signalled when a frame is queued

	mu     sync.Mutex
	frames [][]byte // oldest first
	bytes  int
}

// NewQueue makes an empty queue with the given bounds.
func NewQueue(maxMsgs, maxBytes int) *Queue {
	return &Queue{maxMsgs: maxMsgs, maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// Offer queues frame when the queue, with it, stays within its bounds; a
// frame that fills the queue exactly fits. False queues nothing.
func (q *Queue) Offer(frame []byte) bool { return q.push(frame, q.maxMsgs, q.maxBytes) }

// OfferShare queues frame only when the queue, with it, stays within half
// its bounds: the share open to view traffic on the host's queue. The
// other half stays free for what the broker itself must tell the host
// (viewState, the cancels of a view that left), so views cannot fill it.
func (q *Queue) OfferShare(frame []byte) bool { return q.push(frame, q.maxMsgs/2, q.maxBytes/2) }

func (q *Queue) push(frame []byte, maxMsgs, maxBytes int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.frames)+1 > maxMsgs || q.bytes+len(frame) > maxBytes {
		return false
	}
	q.frames = append(q.frames, frame)
	q.bytes += len(frame)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// Pop takes the oldest frame and releases its bytes; false when empty.
func (q *Queue) Pop() ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.frames) == 0 {
		return nil, false
	}
	f := q.frames[0]
	q.frames[0] = nil // let the frame go with the writer, not the backing array
	q.frames = q.frames[1:]
	q.bytes -= len(f)
	if len(q.frames) == 0 {
		q.frames = nil // drop the backing array too
	}
	return f, true
}

// Discard drops every queued frame and releases their bytes (a connection
// closed without flushing).
func (q *Queue) Discard() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.frames, q.bytes = nil, 0
}

// Ready is signalled (capacity one) whenever a frame is queued; the
// writer then pops until the queue is empty.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Len reports the frames and bytes queued.
func (q *Queue) Len() (msgs, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames), q.bytes
}
