package load

import (
	"testing"

	"github.com/airlock/airlock/executors/baseline"
)

// TestBaselineLabel: the report says how the floor ran, once per fact (a
// command is instantiated per call whatever --reuse-instance says).
func TestBaselineLabel(t *testing.T) {
	for _, c := range []struct {
		style baseline.Style
		reuse bool
		want  string
	}{
		{baseline.Command, false, "plain wazero plugins/echo (command, fresh instance per call, args on stdin)"},
		{baseline.Command, true, "plain wazero plugins/echo (command, fresh instance per call, args on stdin)"},
		{baseline.Reactor, false, "plain wazero plugins/echo (reactor, fresh instance per call)"},
		{baseline.Reactor, true, "plain wazero plugins/echo (reactor, one reused instance per caller)"},
	} {
		if got := baselineLabel("plugins/echo", c.style, c.reuse); got != c.want {
			t.Errorf("%s reuse=%v: %q, want %q", c.style, c.reuse, got, c.want)
		}
	}
}
