package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestPeerCatalogSchemasHeldToPluginBounds: the entries of a page's and
// an environment's catalogs whose inputSchema breaks the plugins' schema
// bounds (a 2^40 $ref bomb, a file: ref, a pattern over the program
// bound) are dropped, logged and counted by reason; GET /v1/tools and MCP
// tools/list carry the good entries beside them and none of the bad.
func TestPeerCatalogSchemasHeldToPluginBounds(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	mcp := connectHTTP(t, w.broker, http.Header{"X-Tensorviz-Token": {testToken}})
	entry := func(id, tool, schema string) wire.Descriptor {
		return wire.Descriptor{DescriptorID: id, Bounds: w.slow,
			Tools: []wire.Tool{{Name: tool, Description: "a peer tool", InputSchema: json.RawMessage(schema)}}}
	}
	bomb := testkit.SchemaBomb(40)
	fileRef := `{"$ref":"file:///etc/passwd"}`
	bigPattern := `{"type":"object","properties":{"s":{"type":"string","pattern":"[a-z]{1000}b"}}}`
	good := `{"type":"object","properties":{"id":{"type":"string","pattern":"^[0-9a-f]{8}$"}}}`

	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{
		entry("pg", "page_ok", good), entry("pgbomb", "page_bomb", bomb), entry("pgfile", "page_file", fileRef),
	}))
	env := w.dialChannel("/channel", nil)
	env.send(wire.HelloFrame(w.pair("lab")))
	env.send(wire.CatalogFrame([]wire.Descriptor{
		entry("m1", "machine_ok", good), entry("mpattern", "machine_pattern", bigPattern), entry("mbomb", "machine_bomb", bomb),
	}))
	testkit.Eventually(t, "both peers' good entries to be listed", func() bool {
		got := w.tools()
		return got["pg"] == "page" && got["m1"] == "machine:lab"
	})
	got := w.tools()
	for _, id := range []string{"pgbomb", "pgfile", "mpattern", "mbomb"} {
		if ex, ok := got[id]; ok {
			t.Errorf("GET /v1/tools lists %s (at %s)", id, ex)
		}
	}
	testkit.Eventually(t, "MCP to list both good tools", func() bool {
		l := mcp.List(t)
		return l["page_ok"] != nil && l["machine_ok"] != nil
	})
	for name := range mcp.List(t) {
		if strings.HasSuffix(name, "_bomb") || strings.HasSuffix(name, "_file") || strings.HasSuffix(name, "_pattern") {
			t.Errorf("MCP tools/list carries %s", name)
		}
	}
	if a := w.call("c1", "pgbomb", w.slow, "page_bomb", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("a call for a dropped entry: %+v", a)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="schema-too-complex"`); n != 3 {
		t.Errorf("schema-too-complex counted %v, want 3", n)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="schema-invalid"`); n != 1 {
		t.Errorf("schema-invalid counted %v, want 1", n)
	}
	w.broker.waitStderr(`"descriptor":"mbomb"`)
}
