package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/plugins"
)

// schemaBomb is an inputSchema of n levels of anyOf over two $refs to the
// next level: validating {} against it explores 2^n branches.
func schemaBomb(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"string"}}}`, n)
	return json.RawMessage(b.String())
}

// TestSchemaBombPluginRefused: a plugin whose tool schema expands
// exponentially is refused at admission as schema-too-complex (logged,
// counted, listed), its tool is not callable, and the plugin beside it
// still answers.
func TestSchemaBombPluginRefused(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	bomb := fxManifestOf("bomb", w.bounds, "echo")
	bomb.Tools[0].InputSchema = schemaBomb(20)
	must(t, plugins.WriteFolder(w.plugins, bomb, testkit.Fixture(t, "guest.wasm")))
	testkit.Eventually(t, "the schema bomb to be logged", func() bool {
		return strings.Contains(w.p.Stderr(), `"plugin":"bomb"`)
	})
	if !strings.Contains(w.p.Stderr(), `"reason":"schema-too-complex"`) {
		t.Errorf("bomb not refused as schema-too-complex:\n%s", grep(w.p.Stderr(), "bomb"))
	}
	if a := postCall(t, w.p, w.body("bomb", w.bounds, "echo", `{}`)); a.OK {
		t.Errorf("the refused plugin's tool answered: %+v", a)
	}
	if a := postCall(t, w.p, w.body("fx", w.bounds, "echo", `{"x":1}`)); !a.OK {
		t.Errorf("the plugin beside the bomb: %+v", a)
	}
	metrics := scrape(t, w.p)
	if !strings.Contains(metrics, `airlock_plugin_admission_failures_total{reason="schema-too-complex"} 1`) {
		t.Errorf("refusal not counted:\n%s", grep(metrics, "admission"))
	}
}
