package mcp

import (
	"encoding/json"
	"testing"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

const countOutput = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`

// typed is a local route whose tool "count" declares countOutput and
// whose module hash is sum; its executor answers with the args.
func typed(t *testing.T, sum string) calls.Route {
	t.Helper()
	rt := route("typed", echo, nil, "count")
	rt.Descriptor.SHA256 = sum
	rt.Descriptor.Tools[0].OutputSchema = json.RawMessage(countOutput)
	s, err := toolschema.Compile(rt.Descriptor.Tools[0].OutputSchema, 1)
	if err != nil {
		t.Fatal(err)
	}
	rt.Outputs = map[string]*toolschema.Schema{"count": s}
	return rt
}

// TestListOutputSchemaAndMeta: a tool's outputSchema is listed; _meta
// carries the executor and, for a local plugin, the module hash under
// MetaPrefix; a peer's tool has no hash; the annotations claim read-only
// and open-world from the bounds and nothing else.
func TestListOutputSchemaAndMeta(t *testing.T) {
	sum := "ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
	peer := route("lab", echo, []string{"example.com"}, "remote")
	peer.Executor = "machine:lab"
	f := start(t, typed(t, sum), peer)
	tools := f.cs.List(t)
	count := tools["count"]
	got, _ := json.Marshal(count.OutputSchema)
	var want any
	_ = json.Unmarshal([]byte(countOutput), &want)
	if w, _ := json.Marshal(want); string(got) != string(w) {
		t.Errorf("outputSchema %s", got)
	}
	if count.Meta[MetaPrefix+"executor"] != "local" || count.Meta[MetaPrefix+"sha256"] != sum {
		t.Errorf("_meta %v", count.Meta)
	}
	remote := tools["remote"]
	if remote.OutputSchema != nil || remote.Meta[MetaPrefix+"executor"] != "machine:lab" || remote.Meta[MetaPrefix+"sha256"] != nil {
		t.Errorf("a peer's tool: %+v %v", remote.OutputSchema, remote.Meta)
	}
	for name, tool := range tools {
		a := tool.Annotations
		open := name == "remote"
		if !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint != open || a.DestructiveHint != nil ||
			a.IdempotentHint || a.Title != "" {
			t.Errorf("%s annotations %+v", name, a)
		}
	}
}

// TestOutputInvalidReachesTheClientByName: a result that does not satisfy
// the tool's outputSchema is the refusal output-invalid, named in the
// text, with no structuredContent (a client holding it to the schema
// would reject the refusal); the refusal object is in _meta.
func TestOutputInvalidReachesTheClientByName(t *testing.T) {
	f := start(t, typed(t, ""))
	res := f.cs.Call(t, "count", map[string]any{"n": 2})
	if sc, _ := json.Marshal(res.StructuredContent); res.IsError || string(sc) != `{"n":2}` {
		t.Errorf("conforming: %+v %s", res, sc)
	}
	res = f.cs.Call(t, "count", map[string]any{"n": "two"})
	if text := mcptest.Text(res); !res.IsError || text != "output-invalid: /n: type" || res.StructuredContent != nil {
		t.Errorf("not conforming: %+v %q", res, text)
	}
	ref, _ := json.Marshal(res.Meta[MetaPrefix+"refusal"])
	var body refusal
	if err := json.Unmarshal(ref, &body); err != nil || body.Refused != wire.OutputInvalid || body.Why != "/n: type" || body.Budget == nil {
		t.Errorf("refusal in _meta: %s %v", ref, err)
	}
}
