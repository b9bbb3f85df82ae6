package executors

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// pageBytes is the WebAssembly page size.
const pageBytes = 64 << 10

// linearMemory backs one instance's memory and refuses to grow it past
// limit, remembering that it did. wazero then fails the guest's
// memory.grow (it returns -1), and whatever the guest does next, the
// executor knows the cause was the memoryMiB bound.
type linearMemory struct {
	limit     uint64
	buf       []byte
	high      int // the longest buf has been: every byte the guest could reach
	exhausted atomic.Bool
	asked     atomic.Uint64 // the size of the grow refused, for the why
}

// limitedAllocator hands out one linearMemory and keeps it so the caller
// can ask, after the run, whether the bound was hit. An instance has at
// most one memory (wasm 2.0), so one allocator serves one instantiation.
type limitedAllocator struct {
	limit uint64
	mem   *linearMemory
	// spare, when set, lends the memory its buffer and takes it back at
	// recycle (commands only; a reactor instance keeps its memory).
	spare *memoryPool
}

var _ experimental.MemoryAllocator = (*limitedAllocator)(nil)

func newAllocator(memoryMiB int) *limitedAllocator {
	return &limitedAllocator{limit: uint64(memoryMiB) << 20}
}

// Allocate implements experimental.MemoryAllocator. capHint is wazero's
// suggested capacity; max the module's declared maximum, which may be far
// above our limit and is ignored in favour of it. A recycled buffer is
// taken first: it is all zeros, as a fresh memory must be.
func (a *limitedAllocator) Allocate(capHint, _ uint64) experimental.LinearMemory {
	m := &linearMemory{limit: a.limit}
	if buf := a.spare.get(); cap(buf) > 0 {
		m.buf = buf
	} else if capHint > 0 && capHint <= a.limit {
		m.buf = make([]byte, 0, capHint)
	}
	a.mem = m
	return m
}

// exhausted reports whether the instance's memory was refused growth.
func (a *limitedAllocator) exhausted() bool { return a.mem != nil && a.mem.exhausted.Load() }

// asked is the memory size, in bytes, whose grow was refused; 0 if none
// was.
func (a *limitedAllocator) asked() uint64 {
	if a == nil || a.mem == nil || !a.mem.exhausted.Load() {
		return 0
	}
	return a.mem.asked.Load()
}

// reset forgets a past refusal, so a pooled instance is judged per call.
func (a *limitedAllocator) reset() {
	if a.mem != nil {
		a.mem.exhausted.Store(false)
	}
}

// recycle zeroes the memory's buffer and gives it to spare for the next
// instantiation. It may only run once nothing can touch the memory again:
// after the instantiation returned (the guest has no thread of its own,
// and host functions run on the caller's goroutine) and the instance was
// closed. Zeroing every byte the guest could reach is what keeps one
// call's data from the next; bytes past high were never reachable and are
// still zero.
func (a *limitedAllocator) recycle() {
	if a.spare == nil || a.mem == nil || a.mem.buf == nil {
		return
	}
	buf := a.mem.buf[:a.mem.high]
	a.mem.buf = nil
	clear(buf)
	a.spare.put(buf[:0])
}

// Reallocate implements experimental.LinearMemory. It grows capacity
// geometrically (capped at the limit) so a guest growing page by page
// costs amortised copies, as wazero's own growth does.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.asked.Store(size)
		m.exhausted.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
	} else {
		newCap := min(max(size, 2*uint64(cap(m.buf))), m.limit)
		buf := make([]byte, size, newCap)
		copy(buf, m.buf)
		m.buf = buf
	}
	m.high = max(m.high, int(size))
	return m.buf
}

// Free implements experimental.LinearMemory. It leaves the buffer be: the
// buffer goes with the linearMemory, or back to the program's spares
// when the command path recycles it (limitedAllocator.recycle), which
// must not race with wazero closing the instance.
func (m *linearMemory) Free() {}

// memoryPool keeps a command program's zeroed linear memories between
// calls, so a call neither allocates nor grows its memory again (the
// largest cost a fresh instance adds to plain wazero's; see RATIONALE.md,
// "Why does a command program recycle its linear memory?"). Every buffer
// is at most memoryMiB, and at most MaxConcurrent are out at once, so the
// pool holds no more than the calls themselves did; sync.Pool lets the
// garbage collector take back the ones an idle program does not use. A
// nil pool lends nothing and keeps nothing.
type memoryPool struct{ p sync.Pool }

func (mp *memoryPool) get() []byte {
	if mp == nil {
		return nil
	}
	if b, ok := mp.p.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

func (mp *memoryPool) put(buf []byte) {
	if mp != nil {
		mp.p.Put(&buf)
	}
}
