package executors

import (
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
	exhausted atomic.Bool
}

// limitedAllocator hands out one linearMemory and keeps it so the caller
// can ask, after the run, whether the bound was hit. An instance has at
// most one memory (wasm 2.0), so one allocator serves one instantiation.
type limitedAllocator struct {
	limit uint64
	mem   *linearMemory
}

var _ experimental.MemoryAllocator = (*limitedAllocator)(nil)

func newAllocator(memoryMiB int) *limitedAllocator {
	return &limitedAllocator{limit: uint64(memoryMiB) << 20}
}

// Allocate implements experimental.MemoryAllocator. capHint is wazero's
// suggested capacity; max the module's declared maximum, which may be far
// above our limit and is ignored in favour of it.
func (a *limitedAllocator) Allocate(capHint, _ uint64) experimental.LinearMemory {
	m := &linearMemory{limit: a.limit}
	if capHint > 0 && capHint <= a.limit {
		m.buf = make([]byte, 0, capHint)
	}
	a.mem = m
	return m
}

// exhausted reports whether the instance's memory was refused growth.
func (a *limitedAllocator) exhausted() bool { return a.mem != nil && a.mem.exhausted.Load() }

// reset forgets a past refusal, so a pooled instance is judged per call.
func (a *limitedAllocator) reset() {
	if a.mem != nil {
		a.mem.exhausted.Store(false)
	}
}

// Reallocate implements experimental.LinearMemory. It grows capacity
// geometrically (capped at the limit) so a guest growing page by page
// costs amortised copies, as wazero's own growth does.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.exhausted.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	newCap := min(max(size, 2*uint64(cap(m.buf))), m.limit)
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() { m.buf = nil }
