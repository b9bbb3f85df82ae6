package executors

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/airlock/airlock/executors/wire"
)

// Table routes calls by descriptorId. Reads (every call) load an
// immutable map through an atomic pointer and take no lock; writes (a
// plugin admitted, replaced or removed) copy the map under a mutex.
type Table struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]*Program]
}

// NewTable returns an empty table.
func NewTable() *Table {
	t := &Table{}
	t.m.Store(&map[string]*Program{})
	return t
}

func (t *Table) update(f func(map[string]*Program)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := maps.Clone(*t.m.Load())
	f(next)
	t.m.Store(&next)
}

// Put admits p under its descriptor id and returns the program it
// replaced, which the caller should Close (calls already routed to it
// finish there).
func (t *Table) Put(p *Program) (old *Program) {
	t.update(func(m map[string]*Program) {
		old = m[p.d.DescriptorID]
		m[p.d.DescriptorID] = p
	})
	return old
}

// Remove withdraws the descriptor and returns its program, or nil.
func (t *Table) Remove(id string) (old *Program) {
	t.update(func(m map[string]*Program) {
		old = m[id]
		delete(m, id)
	})
	return old
}

// Get returns the program admitted under id.
func (t *Table) Get(id string) (*Program, bool) {
	p, ok := (*t.m.Load())[id]
	return p, ok
}

// Programs lists the admitted programs sorted by descriptor id.
func (t *Table) Programs() []*Program {
	m := *t.m.Load()
	ids := slices.Sorted(maps.Keys(m))
	out := make([]*Program, len(ids))
	for i, id := range ids {
		out[i] = m[id]
	}
	return out
}

// Descriptors lists the admitted descriptors sorted by id.
func (t *Table) Descriptors() []wire.Descriptor {
	ps := t.Programs()
	out := make([]wire.Descriptor, len(ps))
	for i, p := range ps {
		out[i] = p.Descriptor()
	}
	return out
}

// Call answers c with the program admitted for its descriptorId, or
// refuses it unattributed-call. That refusal carries no budget: no
// bounds were admitted to report.
func (t *Table) Call(ctx context.Context, c wire.Call) wire.Answer {
	p, ok := t.Get(c.DescriptorID)
	if !ok {
		id := c.CallID
		if !wire.ValidID(id) {
			return wire.Refuse(wire.UnreadableCallID, wire.Malformed, nil)
		}
		return wire.Refuse(id, wire.UnattributedCall, nil)
	}
	return p.Call(ctx, c)
}
