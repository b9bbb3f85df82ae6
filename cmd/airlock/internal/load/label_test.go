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

// TestHTTPFloorLabel: over the broker's Unix socket the bare HTTP floor's
// label says it is reached over a socket too, so its ratio is read as
// the broker's own cost on one transport.
func TestHTTPFloorLabel(t *testing.T) {
	const tcp = "the same reused instances behind a bare net/http server in its own process (pid 7): its run's secret checked, the envelope read with encoding/json, no schema, bounds or metrics"
	if got := httpFloorLabel(&FloorProcess{URL: "http://127.0.0.1:1", PID: 7}); got != tcp {
		t.Errorf("over TCP: %q", got)
	}
	const unix = "the same reused instances behind a bare net/http server in its own process (pid 7) over a Unix socket, as the broker: its run's secret checked, the envelope read with encoding/json, no schema, bounds or metrics"
	if got := httpFloorLabel(&FloorProcess{URL: "http://localhost", Socket: "/run/f/floor.sock", PID: 7}); got != unix {
		t.Errorf("over a Unix socket: %q", got)
	}
}
