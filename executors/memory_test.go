package executors

import (
	"bytes"
	"testing"
)

// TestRecycledMemoryIsZero is the attack on recycling: one call's memory
// must not reach the next. Every byte the first instance could reach,
// including those it reached only before its memory was cut back, reads
// zero in the next, and the recycled buffer keeps the memoryMiB bound.
// (TestCommandIsFreshPerCall is the same attack end to end: a counter in
// the guest's zeroed data.)
func TestRecycledMemoryIsZero(t *testing.T) {
	spare := &memoryPool{}
	first := newAllocator(1) // 16 pages
	first.spare = spare
	m := first.Allocate(pageBytes, 65536*pageBytes)
	b := m.Reallocate(16 * pageBytes)
	for i := range b {
		b[i] = 0xa5
	}
	m.Reallocate(2 * pageBytes) // wazero never shrinks; the high mark covers it if it did
	first.recycle()
	if first.mem.buf != nil {
		t.Fatal("recycled buffer still held by the closed instance")
	}
	for range 3 { // sync.Pool may drop a buffer (it does at random under -race): try a few
		next := newAllocator(1)
		next.spare = spare
		m := next.Allocate(pageBytes, 65536*pageBytes)
		got := m.Reallocate(16 * pageBytes)
		if zeros := bytes.Count(got, []byte{0}); zeros != len(got) {
			t.Fatalf("%d bytes of a recycled memory are not zero", len(got)-zeros)
		}
		if m.Reallocate(17*pageBytes) != nil || !next.exhausted() {
			t.Fatal("growth past the limit was not refused on a recycled memory")
		}
		got[0] = 1
		next.recycle()
	}
}

// TestRecycleWithoutSpares: a reactor's allocator has no spares, so
// recycle leaves its memory alone (the instance lives on in the pool).
func TestRecycleWithoutSpares(t *testing.T) {
	a := newAllocator(1)
	m := a.Allocate(pageBytes, pageBytes)
	b := m.Reallocate(pageBytes)
	b[0] = 7
	a.recycle()
	if a.mem.buf == nil || a.mem.buf[0] != 7 {
		t.Fatal("recycle without spares touched the memory")
	}
	var nilPool *memoryPool
	nilPool.put(b)
	if nilPool.get() != nil {
		t.Fatal("a nil pool lent a buffer")
	}
}
