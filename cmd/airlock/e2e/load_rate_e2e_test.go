package e2e

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// TestLoadRelayRateE2E: `load relay --rate` paces every host and says so
// in the report; `--shapes` runs each shape against the broker and the
// forwarder and reports one run per shape. It checks the structure and
// that every message reached every view, never how fast.
func TestLoadRelayRateE2E(t *testing.T) {
	p := startSessions(t)
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}
	code, stdout, stderr := runCLI(t, env, "load", "relay", "--broker", p.URL(), "--sessions", "1", "--views", "2",
		"--rate", "200", "-d", "1s", "--warmup", "0s", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var r load.RelayReport
	decodeReport(t, stdout, &r)
	if r.Rate != 200 || r.Window != load.RateWindow || r.Views != 2 || r.Baseline == nil {
		t.Fatalf("header %+v", r)
	}
	checkPaced(t, &r)

	code, stdout, stderr = runCLI(t, env, "load", "relay", "--broker", p.URL(), "--sessions", "1", "--shapes", "1x300,3x100",
		"-d", "1s", "--warmup", "0s", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var s load.ShapesReport
	decodeReport(t, stdout, &s)
	if s.Command != "relay" || len(s.Runs) != 2 || s.Runs[0].Views != 1 || s.Runs[0].Rate != 300 || s.Runs[1].Views != 3 || s.Runs[1].Rate != 100 {
		t.Fatalf("shapes report %+v", s)
	}
	for _, run := range s.Runs {
		checkPaced(t, run)
	}

	code, stdout, stderr = runCLI(t, env, "load", "relay", "--broker", p.URL(), "--sessions", "1", "--shapes", "1x200",
		"-d", "1s", "--warmup", "0s")
	if code != 0 || !strings.Contains(stdout, "sessions×views") || !strings.Contains(stdout, "ratio p50") || !strings.Contains(stderr, "shape 1×1 views, each host at 200 msg/s") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// checkPaced wants both sides to have sent no more than the schedule
// allows (a slow machine can only send fewer) and delivered (deliveries
// that land after a turn ends are not counted), with nothing dropped or
// refused.
func checkPaced(t *testing.T, r *load.RelayReport) {
	t.Helper()
	for name, f := range r.Sides() {
		most := int64(r.Sessions) * (int64(f.Seconds*float64(r.Rate)) + 1)
		if f.MessagesSent <= 0 || f.MessagesSent > most || f.Deliveries <= 0 || f.Deliveries > f.MessagesSent*int64(r.Views) {
			t.Errorf("%d views at %d/s, %s: sent %d (at most %d), delivered %d", r.Views, r.Rate, name, f.MessagesSent, most, f.Deliveries)
		}
		if f.DroppedViews != 0 || f.Refusals != 0 || f.SendErrors != 0 {
			t.Errorf("%s: dropped %d (%v), refused %d, send errors %d (%s)", name, f.DroppedViews, f.Closes, f.Refusals, f.SendErrors, f.FirstError)
		}
	}
	checkRatios(t, r.Ratios)
}

// TestLoadRelayRateRefusedE2E: a rate or shape that cannot make a run is
// a usage error (exit 2) naming the flag.
func TestLoadRelayRateRefusedE2E(t *testing.T) {
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--rate", "-1"}, "--rate must be between 0 and 1000000, got -1"},
		{[]string{"--rate", "1000001"}, "--rate must be between 0 and 1000000"},
		{[]string{"--shapes", "100"}, `--shapes: load: shapes are VIEWSxRATE`},
		{[]string{"--shapes", "1x10,0x5"}, `"0x5"`},
	} {
		code, _, stderr := runCLI(t, env, append([]string{"load", "relay"}, c.args...)...)
		if code != exitcode.Usage || !strings.Contains(stderr, c.err) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", c.args, code, stderr, exitcode.Usage, c.err)
		}
	}
}
