package channel

import (
	"errors"

	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// control handles a frame with a top-level "type": after authentication
// the only control message a peer may send is its catalog. An invalid one
// is counted and logged, and the previous catalog stays.
func (c *Channel) control(p *peer, data []byte) {
	ds, err := wire.ParseCatalog(data)
	if err != nil {
		c.m.ChannelFramesRejected.WithLabelValues(reasonCatalogInvalid).Inc()
		c.log.Warn("catalog rejected", "executor", p.executor(), "rule", string(wire.RuleOf(err)))
		return
	}
	ds, outputs := c.admissible(p.executor(), ds)
	c.accept(p, ds, outputs)
}

// admissible is ds without the entries a tool of which has an inputSchema
// or an outputSchema that a plugin's would not be admitted with
// (toolschema.Compile): the broker passes
// peers' schemas on to /v1/tools and MCP clients, so they are held to the
// same bounds. Each dropped entry is logged and counted by reason; the
// rest of the catalog stands. A frame's catalog is checked before accept
// takes c.mu (checking compiles the schemas); a remembered one as it is
// loaded. outputs holds, by descriptor id, the compiled outputSchemas of
// the entries kept: the router holds the peer's observations to them.
func (c *Channel) admissible(executor string, ds []wire.Descriptor) ([]wire.Descriptor, map[string]map[string]*toolschema.Schema) {
	out := make([]wire.Descriptor, 0, len(ds))
	outputs := map[string]map[string]*toolschema.Schema{}
	for _, d := range ds {
		compiled, which, err := compileSchemas(d)
		if err == nil {
			out = append(out, d)
			if len(compiled) > 0 {
				outputs[d.DescriptorID] = compiled
			}
			continue
		}
		var se *toolschema.Error
		errors.As(err, &se)
		c.m.ChannelFramesRejected.WithLabelValues(se.Reason).Inc()
		c.log.Warn("catalog entry dropped: a tool's schema is not admitted", "executor", executor,
			"descriptor", d.DescriptorID, "schema", which, "reason", se.Reason, "err", wire.PeerWhy(se.Err.Error()))
	}
	return out, outputs
}

// outputIdle is how many compiled copies of a peer's outputSchema wait
// between calls (toolschema.Compile's idle), made only as concurrent
// calls need them: as many as a local plugin's calls that run at once by
// default (exec.max_concurrent); a call past them compiles a copy of its
// own.
const outputIdle = 16

// compileSchemas checks every tool's inputSchema of d and compiles its
// outputSchema, if any; it names the first schema that fails ("the
// inputSchema of tool x").
func compileSchemas(d wire.Descriptor) (map[string]*toolschema.Schema, string, error) {
	outputs := map[string]*toolschema.Schema{}
	for _, t := range d.Tools {
		if err := toolschema.Check(t.InputSchema); err != nil {
			return nil, "the inputSchema of tool " + t.Name, err
		}
		if t.OutputSchema == nil {
			continue
		}
		s, err := toolschema.Compile(t.OutputSchema, outputIdle)
		if err != nil {
			return nil, "the outputSchema of tool " + t.Name, err
		}
		outputs[t.Name] = s
	}
	return outputs, "", nil
}

// accept makes ds the remembered catalog of p's executor, provided p is
// still that executor's connection (not replaced, not revoked), and
// routes to it. A machine's catalog is also written to the data folder so
// that its descriptors are still known, and refused machine-unreachable,
// after a restart. A page's catalog loses the entries other executors
// hold (see unheld), and becomes the one the broker remembers for the
// page, in memory only, until another page's catalog replaces it: calls
// for it go to p alone, and are refused no-page while p is not connected.
func (c *Channel) accept(p *peer, ds []wire.Descriptor, outputs map[string]map[string]*toolschema.Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slotOf(p.identity)
	if s == nil || s.peer.Load() != p {
		return
	}
	if p.kind == Page {
		ds = c.unheld(ds)
		s.declaredBy = p.serial
	}
	s.catalog, s.outputs = ds, outputs
	if p.kind == Machine {
		if err := pairing.SaveCatalog(c.opts.Data, p.name, ds); err != nil {
			c.log.Warn("catalog not remembered on disk", "executor", p.executor(), "err", err)
		}
	}
	c.rebuild()
	c.log.Info("catalog accepted", "executor", p.executor(), "descriptors", len(ds))
}

// slotOf is the slot of an identity, or nil for a pairing that is gone.
// Callers hold c.mu.
func (c *Channel) slotOf(id identity) *slot {
	if id.kind == Page {
		return c.page
	}
	return c.machines[id.name]
}

// remember loads the catalog a pairing last sent, if the data folder
// holds one, held to the bounds a frame's catalog is (admissible): the
// file may come from an older broker, or have been edited. A damaged
// file is logged and ignored: the environment sends a fresh catalog when
// it connects.
func (c *Channel) remember(s *slot) {
	ds, ok, err := pairing.LoadCatalog(c.opts.Data, s.name)
	if err != nil {
		c.log.Warn("remembered catalog unreadable", "executor", s.executor, "err", err)
		return
	}
	if ok {
		s.catalog, s.outputs = c.admissible(s.executor, ds)
	}
}

// unheld is a page's catalog without the entries whose descriptorId a
// local plugin or a pairing holds (connected or not: a remembered catalog
// still holds its ids), under c.mu. Any local process that passes the
// page check could otherwise announce a paired machine's descriptor and
// receive its callers' arguments. Each dropped entry is logged and
// counted; the rest of the catalog stands.
func (c *Channel) unheld(ds []wire.Descriptor) []wire.Descriptor {
	out := make([]wire.Descriptor, 0, len(ds))
	for _, d := range ds {
		holder := c.holder(d.DescriptorID)
		if holder == "" {
			out = append(out, d)
			continue
		}
		c.m.ChannelFramesRejected.WithLabelValues(reasonDescriptorHeld).Inc()
		c.log.Warn("page catalog entry dropped: the descriptor is held by another executor",
			"descriptor", d.DescriptorID, "holder", holder)
	}
	return out
}

// holder is the executor other than the page that holds descriptor id, or
// "" when none does. Callers hold c.mu.
func (c *Channel) holder(id string) string {
	if c.opts.Local != nil && hasLocal(c.opts.Local, id) {
		return "local"
	}
	for _, s := range c.machines {
		for _, d := range s.catalog {
			if d.DescriptorID == id {
				return s.executor
			}
		}
	}
	return ""
}
