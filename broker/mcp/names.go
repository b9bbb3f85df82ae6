package mcp

import (
	"encoding/json"
	"strings"

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
	bounds     wire.Bounds
	echo       json.RawMessage // bounds as boundsEcho: the JSON GET /v1/tools lists
}

// skipped is a tool left out of the list, and why (for the log).
type skipped struct{ name, why string }

// entries names every tool of ds (PROTOCOL section 11): its own name when
// exactly one descriptor declares it, else <descriptorId>.<tool> for each.
// A name that is not made of A–Z a–z 0–9 _ - . only, is over MaxNameLen,
// or equals another name (a qualified name that is also some tool's own
// name) is left out and reported: listing it would make a call ambiguous
// or invalid for the client. Descriptor and tool names are validated at
// admission, so with the bundled plugins nothing is ever left out.
func entries(ds []wire.Descriptor) (map[string]*entry, []skipped) {
	declared := map[string]int{}
	for _, d := range ds {
		for _, t := range d.Tools {
			declared[t.Name]++
		}
	}
	out := map[string]*entry{}
	dup := map[string]bool{}
	var left []skipped
	for _, d := range ds {
		echo, _ := json.Marshal(d.Bounds)
		for _, t := range d.Tools {
			name := t.Name
			if declared[t.Name] > 1 {
				name = d.DescriptorID + "." + t.Name
			}
			switch {
			case !ValidName(name):
				left = append(left, skipped{name, "not a valid MCP tool name"})
				continue
			case out[name] != nil || dup[name]:
				dup[name] = true
				continue
			}
			out[name] = &entry{name: name, descriptor: d.DescriptorID, tool: t, executor: d.Executor, bounds: d.Bounds, echo: echo}
		}
	}
	for name := range dup {
		delete(out, name)
		left = append(left, skipped{name, "two tools would have this name"})
	}
	return out, left
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
	return e.descriptor == o.descriptor && e.executor == o.executor && e.tool.Name == o.tool.Name &&
		e.tool.Description == o.tool.Description && string(e.tool.InputSchema) == string(o.tool.InputSchema) &&
		string(e.echo) == string(o.echo)
}
