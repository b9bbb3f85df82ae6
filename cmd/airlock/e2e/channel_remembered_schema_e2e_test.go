package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestRememberedCatalogHeldToSchemaBounds: a pairing's catalog remembered
// in the data folder (written by an older broker, or edited) is held to
// the plugins' schema bounds when the broker loads it, as a catalog frame
// is: an entry with a 2^40 $ref bomb, as its inputSchema or as its
// outputSchema, is neither listed by GET /v1/tools nor MCP tools/list, nor
// routed, and is counted; the good entry stays, refused
// machine-unreachable.
func TestRememberedCatalogHeldToSchemaBounds(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	w.pair("lab")
	w.broker.Stop()
	entry := func(id, tool, schema string) wire.Descriptor {
		return wire.Descriptor{DescriptorID: id, Bounds: w.slow,
			Tools: []wire.Tool{{Name: tool, Description: "a remembered tool", InputSchema: json.RawMessage(schema)}}}
	}
	outBomb := entry("mout", "machine_out", `{"type":"object"}`)
	outBomb.Tools[0].OutputSchema = json.RawMessage(strings.Replace(testkit.SchemaBomb(40), `{`, `{"type":"object",`, 1))
	must(t, pairing.SaveCatalog(w.data, "lab", []wire.Descriptor{
		entry("m1", "machine_ok", `{"type":"object"}`), entry("mbomb", "machine_bomb", testkit.SchemaBomb(40)), outBomb,
	}))
	w.startBroker()

	got := w.tools()
	if got["m1"] != "machine:lab" {
		t.Errorf("the good remembered entry is listed at %q, want machine:lab", got["m1"])
	}
	for _, id := range []string{"mbomb", "mout"} {
		if ex, ok := got[id]; ok {
			t.Errorf("GET /v1/tools lists the remembered bomb %s (at %s)", id, ex)
		}
	}
	mcp := connectHTTP(t, w.broker, http.Header{"X-Tensorviz-Token": {testToken}})
	if l := mcp.List(t); l["machine_bomb"] != nil || l["machine_out"] != nil || l["machine_ok"] == nil {
		t.Errorf("MCP tools/list: bombs %v %v, good %v", l["machine_bomb"] != nil, l["machine_out"] != nil, l["machine_ok"] != nil)
	}
	if a := w.call("c1", "mbomb", w.slow, "machine_bomb", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("a call for the dropped entry: %+v, want %s", a, wire.UnattributedCall)
	}
	if a := w.call("c2", "m1", w.slow, "machine_ok", `{}`); a.Refused != wire.MachineUnreachable {
		t.Errorf("a call for the good entry: %+v, want %s", a, wire.MachineUnreachable)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="schema-too-complex"`); n != 2 {
		t.Errorf("schema-too-complex counted %v, want 2", n)
	}
	w.broker.waitStderr(`"descriptor":"mbomb"`)
	w.broker.waitStderr(`"schema":"the outputSchema of tool machine_out"`)
}
