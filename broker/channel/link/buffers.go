package link

import "sync"

// Outgoing frames are encoded into reused buffers: a frame is written
// (Writer.WriteTaken) before its sender goes on, and nothing keeps it
// afterwards, so its buffer can carry the next one (RATIONALE.md, "Why
// are outgoing channel frames encoded into pooled buffers?").

// maxPooledFrame is the largest buffer kept for reuse: one large answer
// does not pin its memory in the pool.
const maxPooledFrame = 64 << 10

var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Buffer is an empty buffer to encode one outgoing frame into; give it
// back with Release once the frame is written.
func Buffer() *[]byte {
	b := frameBuffers.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// Release takes back b, whose storage is now frame's (what was appended
// to it), once frame is written and referred to by nothing.
func Release(b *[]byte, frame []byte) {
	if cap(frame) > maxPooledFrame {
		return
	}
	*b = frame[:0]
	frameBuffers.Put(b)
}
