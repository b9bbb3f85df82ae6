package channel

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// slot is one executor the broker knows of, the page or a pairing: its
// remembered catalog and its current connection, if any. The catalog is
// guarded by Channel.mu; the connection is read on every call without it.
type slot struct {
	identity // for a machine, digest is the pairing's current digest
	executor string
	peer     atomic.Pointer[peer]
	catalog  []wire.Descriptor
	// outputs is the compiled outputSchemas of catalog, by descriptor id
	// then tool (Channel.admissible); replaced with catalog.
	outputs map[string]map[string]*toolschema.Schema
	// declaredBy is the serial of the page connection that sent catalog;
	// zero for a pairing, whose every connection serves its catalog.
	declaredBy uint64
}

func newSlot(id identity) *slot {
	return &slot{identity: id, executor: id.executor()}
}

// routeExecutor sends the calls of one remembered descriptor to its slot's
// current connection, waiting its timeoutMs plus the grace, and holds the
// answers to the descriptor's bounds.
type routeExecutor struct {
	slot    *slot
	owner   uint64 // the slot's declaredBy when the route was built
	bounds  wire.Bounds
	timeout time.Duration
}

// Call asks the connected peer, or refuses at once, sending nothing, when
// none that admitted the descriptor is connected (no-page,
// machine-unreachable): a newer page is not sent the calls of the page
// before it, only those of the catalog it sends itself.
func (d routeExecutor) Call(ctx context.Context, c wire.Call) wire.Answer {
	p := d.slot.peer.Load()
	if p == nil || (d.owner != 0 && p.serial != d.owner) {
		return wire.Refuse(c.CallID, d.slot.kind.offline(), nil)
	}
	return p.remote.Ask(ctx, c, d.bounds, d.timeout)
}

var _ wire.Executor = routeExecutor{}

// routeTable is an immutable snapshot of where each channel descriptor
// goes, rebuilt whenever a catalog or the pairings change, so Lookup (on
// every call's path) takes no lock.
type routeTable struct {
	byID map[string]calls.Route
	list []calls.Route
}

// shadow is a descriptor that a higher-priority executor also advertises:
// it is not routed to.
type shadow struct{ id, loser, winner string }

// Lookup finds the route for a descriptor advertised on the channel.
func (c *Channel) Lookup(id string) (calls.Route, bool) {
	rt, ok := c.routes.Load().byID[id]
	return rt, ok
}

// Routes lists the channel's routes, winners only, sorted by id.
func (c *Channel) Routes() []calls.Route { return c.routes.Load().list }

var _ calls.Source = (*Channel)(nil)

// rebuild recomputes the route table from the remembered catalogs, under
// c.mu, applying the documented rule: machines win in ascending byte order
// of their pairing names, and over the page, which may never take a
// descriptor another executor holds (see accept). Local descriptors win
// over all; the router asks its local source first.
func (c *Channel) rebuild() {
	grace := time.Duration(c.opts.Config.GraceMs) * time.Millisecond
	t := &routeTable{byID: map[string]calls.Route{}}
	var shadows []shadow
	for _, s := range c.slotsInOrder() {
		for i := range s.catalog {
			d := &s.catalog[i] // a catalog is replaced whole, never changed in place
			won, taken := t.byID[d.DescriptorID]
			switch {
			case c.opts.Local != nil && hasLocal(c.opts.Local, d.DescriptorID):
				shadows = append(shadows, shadow{d.DescriptorID, s.executor, "local"})
			case taken:
				shadows = append(shadows, shadow{d.DescriptorID, s.executor, won.Executor})
			}
			if taken {
				continue
			}
			timeout := time.Duration(d.Bounds.TimeoutMs)*time.Millisecond + grace
			rt := calls.Route{Descriptor: d, Executor: s.executor, To: routeExecutor{slot: s, owner: s.declaredBy, bounds: d.Bounds, timeout: timeout},
				Outputs: s.outputs[d.DescriptorID]}
			t.byID[d.DescriptorID] = rt
			t.list = append(t.list, rt)
		}
	}
	sort.Slice(t.list, func(i, j int) bool { return t.list[i].Descriptor.DescriptorID < t.list[j].Descriptor.DescriptorID })
	c.routes.Store(t)
	c.logShadows(shadows)
	c.changed()
}

func hasLocal(src calls.Source, id string) bool {
	_, ok := src.Lookup(id)
	return ok
}

// slotsInOrder is the pairings by name, then the page: the routing order.
func (c *Channel) slotsInOrder() []*slot {
	names := make([]string, 0, len(c.machines))
	for name := range c.machines {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]*slot, 0, len(names)+1)
	for _, name := range names {
		out = append(out, c.machines[name])
	}
	return append(out, c.page)
}

// logShadows logs each shadowed descriptor once, when it becomes shadowed.
// Only the current set is kept, so memory stays bounded by the catalogs.
func (c *Channel) logShadows(now []shadow) {
	next := make(map[shadow]bool, len(now))
	for _, s := range now {
		next[s] = true
		if !c.shadows[s] {
			c.log.Warn("descriptor shadowed: calls go to the higher-priority executor",
				"descriptor", s.id, "executor", s.loser, "winner", s.winner)
		}
	}
	c.shadows = next
}
