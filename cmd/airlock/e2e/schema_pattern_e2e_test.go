package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// withSchema is the fixture's manifest for id with one echo tool of schema.
func withSchema(id string, b wire.Bounds, schema string) plugins.Manifest {
	m := fxManifestOf(id, b, "echo")
	m.Tools[0].InputSchema = json.RawMessage(schema)
	return m
}

// TestSchemaPatternProgramTooLargeRefused: a pattern, or a
// patternProperties key, whose compiled RE2 program is over the bound is
// refused at admission as schema-too-complex (logged and counted), and the
// plugin beside them still answers.
func TestSchemaPatternProgramTooLargeRefused(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	for id, schema := range map[string]string{
		"bigpattern": `{"type":"object","properties":{"s":{"type":"string","pattern":"[a-z]{1000}b"}}}`,
		"bigkey":     `{"type":"object","patternProperties":{"^[a-z]{1000}b$":{}}}`,
	} {
		must(t, plugins.WriteFolder(w.plugins, withSchema(id, w.bounds, schema), testkit.Fixture(t, "guest.wasm")))
	}
	testkit.Eventually(t, "both plugins to be logged", func() bool {
		return strings.Contains(w.p.Stderr(), `"plugin":"bigpattern"`) && strings.Contains(w.p.Stderr(), `"plugin":"bigkey"`)
	})
	for _, id := range []string{"bigpattern", "bigkey"} {
		if a := postCall(t, w.p, w.body(id, w.bounds, "echo", `{}`)); a.Refused != wire.UnattributedCall {
			t.Errorf("%s: the refused plugin's tool answered: %+v", id, a)
		}
	}
	if a := postCall(t, w.p, w.body("fx", w.bounds, "echo", `{"x":1}`)); !a.OK {
		t.Errorf("the plugin beside them: %+v", a)
	}
	metrics := scrape(t, w.p)
	if !strings.Contains(metrics, `airlock_plugin_admission_failures_total{reason="schema-too-complex"} 2`) {
		t.Errorf("refusals not counted as schema-too-complex:\n%s\n%s", grep(metrics, "admission"), grep(w.p.Stderr(), "big"))
	}
}

// TestHostilePatternArgumentAnsweredAtTheTimeBound: an admitted pattern
// near the program bound against a 1 MiB argument is more work than the
// tool's timeoutMs allows; validation runs under the call's time bound,
// so the call is answered exec-timeout, not args-invalid once the match
// has run its course.
func TestHostilePatternArgumentAnsweredAtTheTimeBound(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	// The hostile match is about 10^9 steps (8 s for Go's regexp on an
	// idle machine, more under -race or load), past 2.5 s anywhere; a
	// matching argument is about 10^6 steps, far inside it even on a
	// loaded machine, where the 1 s bound of the loop fixture is not.
	b := w.loop
	b.TimeoutMs = 2500
	schema := `{"type":"object","properties":{"s":{"type":"string","pattern":"[a-z]{990}b"}}}`
	must(t, plugins.WriteFolder(w.plugins, withSchema("pat", b, schema), testkit.Fixture(t, "guest.wasm")))
	testkit.Eventually(t, "pat to be admitted", func() bool {
		return postCall(t, w.p, w.body("pat", b, "echo", `{"s":"b"}`)).Refused == wire.ArgsInvalid
	})
	arg := `{"s":"` + strings.Repeat("a", 1<<20) + `"}`
	if a := postCall(t, w.p, w.body("pat", b, "echo", arg)); a.Refused != wire.ExecTimeout {
		t.Errorf("hostile argument under timeoutMs %d: %+v", b.TimeoutMs, a)
	}
	if a := postCall(t, w.p, w.body("pat", b, "echo", `{"s":"`+strings.Repeat("a", 990)+`b"}`)); !a.OK {
		t.Errorf("a matching argument after the hostile one: %+v", a)
	}
	metrics := scrape(t, w.p)
	if n := metricValue(metrics, "airlock_tool_calls_total", `descriptor="pat"`, `tool="echo"`, `outcome="exec-timeout"`); n != 1 {
		t.Errorf("exec-timeout counted %v times, want 1:\n%s", n, grep(metrics, `descriptor="pat"`))
	}
}
