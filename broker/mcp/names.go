package mcp

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/executors/wire"
)

// MaxNameLen is the longest MCP tool name the server lists (PROTOCOL
// section 11).
const MaxNameLen = 128

// entry is one MCP tool: an admitted tool of one descriptor, under the
// name agents call it by.
type entry struct {
	name       string
	descriptor string
	tool       wire.Tool
	executor   string
	sha256     string             // a local plugin's module hash (wire.Descriptor.SHA256)
	signer     *wire.Signer       // a signed plugin's key (wire.Descriptor.Signer)
	source     *wire.PluginSource // where a pulled plugin came from (wire.Descriptor.Source)
	bounds     wire.Bounds
	echo       json.RawMessage // bounds as boundsEcho: the JSON GET /v1/tools lists
	collided   bool            // a peer's tool qualified because another tool has its name
	// others are the other descriptors that declare the tool's name
	// when it is listed qualified for that reason, sorted (for the log).
	others []string
}

// skipped is a tool left out of the list, and why (for the log); peer
// marks a peer's tool left out because another tool declares its name.
type skipped struct {
	name, why string
	peer      bool
}

// entries names every tool of ds (PROTOCOL section 11). A local plugin's
// tool is listed under its own name unless another local descriptor
// declares that name too; a peer's (page or machine) tool under its own
// name only when no other descriptor at all declares it. Otherwise the
// tool is <descriptorId>.<tool>: a peer's catalog can never rename, let
// alone drop, a local tool. Neither descriptor ids nor tool names hold a
// '.' (wire.ValidToolName), so a qualified name is some one tool's and
// never another tool's own name. A name that is not made of A–Z a–z 0–9 _
// - . only or is over MaxNameLen (a qualified name can be) is left out
// and reported; so is, keeping the local one, a name listed twice, which
// a remote broker of another version could still cause. An entry of a
// peer's tool qualified because another tool has its name is marked
// collided; every qualified entry names the others that declare it.
func entries(ds []wire.Descriptor) (out map[string]*entry, left []skipped) {
	local, all := map[string][]string{}, map[string][]string{} // tool name → descriptors declaring it
	for _, d := range ds {
		for _, t := range d.Tools {
			all[t.Name] = append(all[t.Name], d.DescriptorID)
			if d.Executor == calls.LocalExecutor {
				local[t.Name] = append(local[t.Name], d.DescriptorID)
			}
		}
	}
	out = map[string]*entry{}
	dup := map[string]bool{}
	for _, locals := range []bool{true, false} { // a local tool takes its name first
		for _, d := range ds {
			if (d.Executor == calls.LocalExecutor) != locals {
				continue
			}
			echo, _ := json.Marshal(d.Bounds)
			for _, t := range d.Tools {
				declaring := all[t.Name]
				if locals {
					declaring = local[t.Name]
				}
				name, collides := t.Name, len(declaring) > 1
				var others []string
				if collides {
					name = d.DescriptorID + "." + t.Name
					others = othersThan(declaring, d.DescriptorID)
				}
				switch {
				case !ValidName(name):
					left = append(left, skipped{name, "not a valid MCP tool name", !locals && collides})
					continue
				case out[name] != nil && out[name].executor == calls.LocalExecutor && !locals:
					left = append(left, skipped{name, "a local tool has this name", true})
					continue
				case out[name] != nil || dup[name]:
					dup[name] = true
					continue
				}
				out[name] = &entry{name: name, descriptor: d.DescriptorID, tool: t, executor: d.Executor, sha256: d.SHA256, signer: d.Signer, source: d.Source, bounds: d.Bounds, echo: echo,
					collided: !locals && collides, others: others}
			}
		}
	}
	for name := range dup {
		delete(out, name)
		left = append(left, skipped{name, "two tools would have this name", false})
	}
	return out, left
}

// othersThan is ids without id, sorted and without repeats.
func othersThan(ids []string, id string) []string {
	var out []string
	for _, o := range ids {
		if o != id {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ValidName reports whether name may be listed: 1 to MaxNameLen
// characters, each one of A–Z a–z 0–9 _ - .
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0
}

// same reports whether two entries list the same: a tool replaced by an
// equal one is not a change.
func (e *entry) same(o *entry) bool {
	return e.descriptor == o.descriptor && e.executor == o.executor && e.sha256 == o.sha256 && e.signer.String() == o.signer.String() && e.source.String() == o.source.String() && e.tool.Name == o.tool.Name &&
		e.tool.Description == o.tool.Description && string(e.tool.InputSchema) == string(o.tool.InputSchema) &&
		string(e.tool.OutputSchema) == string(o.tool.OutputSchema) && string(e.echo) == string(o.echo)
}

// report logs, at warn, each tool newly listed under a qualified name
// because another descriptor declares its name (naming both, and the
// name agents now call it by) and each tool newly left out of the list,
// and counts, in airlock_mcp_tool_collisions_total, each peer's tool
// newly listed qualified or left out because another tool has its name:
// once when it happens, not at every sync. Callers hold syncMu.
func (s *Server) report(next map[string]*entry, left []skipped) {
	cur := *s.tools.Load()
	for name, e := range next {
		if len(e.others) > 0 && (cur[name] == nil || !slices.Equal(cur[name].others, e.others)) {
			s.o.Logger.Warn("mcp: tool renamed for agents: another plugin declares the same tool",
				"tool", e.tool.Name, "plugin", e.descriptor, "also_declared_by", strings.Join(e.others, ", "),
				"mcp_name", name, "executor", e.executor)
		}
		if e.collided && (cur[name] == nil || !cur[name].collided) {
			s.o.Metrics.MCPToolCollisions.WithLabelValues("qualified").Inc()
		}
	}
	now := make(map[string]bool, len(left))
	for _, sk := range left {
		now[sk.name] = true
		if s.left[sk.name] {
			continue
		}
		s.o.Logger.Warn("mcp: tool not listed", "name", sk.name, "why", sk.why)
		if sk.peer {
			s.o.Metrics.MCPToolCollisions.WithLabelValues("dropped").Inc()
		}
	}
	s.left = now
}
