package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/plugins"
)

// TestSchemaBombPluginRefused: a plugin whose tool schema expands
// exponentially is refused at admission as schema-too-complex (logged,
// counted, listed), its tool is not callable, and the plugin beside it
// still answers.
func TestSchemaBombPluginRefused(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	bomb := fxManifestOf("bomb", w.bounds, "echo")
	bomb.Tools[0].InputSchema = json.RawMessage(testkit.SchemaBomb(20))
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
