package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// TestRefusalWhysNameTheBound: over POST /v1/calls, each refusal a bound
// or the descriptor decides says which setting to change: the bound's
// key in plugin.json with its value and what the call reached, the tool
// asked for and the descriptor, the unexpected key and the allowed ones.
// No why carries a value from the args.
func TestRefusalWhysNameTheBound(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	const marker = "zq-arg-value-never-echoed-7731"
	for _, c := range []struct {
		name, tool, args string
		rule             wire.Rule
		why              string
	}{
		{"output read in full", "bigout", `{"n":5000,"marker":"` + marker + `"}`, wire.OutputTooLarge,
			"the tool's output was 5000 bytes, over bounds.maxOutputBytes 4096"},
		{"output stopped at the bound", "bigout", `{"n":100000,"marker":"` + marker + `"}`, wire.OutputTooLarge,
			"the tool's output was more than 4096 bytes (bounds.maxOutputBytes)"},
		{"time", "loop", `{"marker":"` + marker + `"}`, wire.ExecTimeout,
			"the tool ran past bounds.timeoutMs 1000 ms"},
		{"unknown tool", "rm_rf", `{"marker":"` + marker + `"}`, wire.UnknownTool,
			`the descriptor "fx" declares no tool "rm_rf"`},
		{"unexpected key", "readfile", `{"pth":"` + marker + `"}`, wire.ArgsInvalid,
			`unexpected key "pth"; allowed: path; /path: required`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := w.call(t, c.tool, c.args)
			if a.OK || a.Refused != c.rule || a.Why != c.why {
				t.Errorf("%s %s: %s %q, want %s %q", c.tool, c.args, a.Refused, a.Why, c.rule, c.why)
			}
			if data, _ := json.Marshal(a); strings.Contains(string(data), marker) {
				t.Errorf("the answer echoes an argument value: %s", data)
			}
		})
	}
}
