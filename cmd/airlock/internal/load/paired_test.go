package load

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// TestPairedFloor: the floor is one local call then one round trip
// (1/(1/local + 1/rtt) calls/s, p50 summed); the ratios divide the paired
// side by it, and a side that measured nothing leaves them undefined.
func TestPairedFloor(t *testing.T) {
	fig := func(rate, p50 float64) *CallsFigures {
		return &CallsFigures{CallsPerSecond: rate, LatencyMs: LatencySummary{P50: p50}}
	}
	f, r := pairedFloor(fig(600, 1.5), fig(1000, 1.0), fig(4000, 0.25))
	if f == nil || r == nil || !near(f.CallsPerSecond, 800) || !near(f.P50Ms, 1.25) {
		t.Fatalf("floor %+v ratios %+v", f, r)
	}
	if !near(r.Throughput, 0.75) || !near(r.TimePerCall, 800.0/600) || !near(r.P50, 1.2) {
		t.Fatalf("ratios %+v", r)
	}
	if f, r := pairedFloor(fig(0, 0), fig(1000, 1), fig(4000, 0.25)); f == nil || r != nil {
		t.Errorf("paired measured nothing: floor %+v ratios %+v, want a floor and no ratios", f, r)
	}
	for _, c := range [][2]*CallsFigures{{fig(0, 1), fig(4000, 0.25)}, {fig(1000, 1), fig(4000, 0)}} {
		if f, r := pairedFloor(fig(600, 1.5), c[0], c[1]); f != nil || r != nil {
			t.Errorf("a floor side measured nothing: floor %+v ratios %+v", f, r)
		}
	}
}

// TestPairedReportPrint: the text names the three sides, the floor row,
// the ratio against the target and each outcome; JSON is one object for
// one concurrency and an array for several.
func TestPairedReportPrint(t *testing.T) {
	side := func(label string, n int64) CallsFigures {
		return CallsFigures{Label: label, Calls: n, Seconds: 1, CallsPerSecond: float64(n),
			LatencyMs: LatencySummary{P50: 1, P90: 2, P99: 3, Max: 4}, Outcomes: map[string]int64{"ok": n}}
	}
	r := &PairedReport{Command: "calls", Shape: "paired", Broker: "http://127.0.0.1:7420", Tool: "echo",
		PairedDescriptorID: "echo-env", PairedExecutor: "machine:lab", LocalDescriptorID: "echo", LocalExecutor: "local",
		Concurrency: 4, Paired: side("p", 600), Local: side("l", 1000), RTT: side("r", 4000)}
	r.Floor, r.Ratios = pairedFloor(&r.Paired, &r.Local, &r.RTT)
	var out bytes.Buffer
	r.Print(&out)
	for _, want := range []string{"echo on http://127.0.0.1:7420, paired descriptor echo-env (machine:lab) beside local descriptor echo, 4 callers",
		"\n  local + rtt ", "800.0", "ratio paired/(local + rtt): calls/s 0.75× (time per call 1.33×)   p50 0.5×   (target: time per call and p50 at most 1.5×)",
		`paired outcomes: {"ok":600}`, `rtt outcomes: {"ok":4000}`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "note: not every call") {
		t.Errorf("all ok, yet a note:\n%s", out.String())
	}

	out.Reset()
	PrintReports(&out, []*PairedReport{r}, true)
	var one PairedReport
	if err := json.Unmarshal(out.Bytes(), &one); err != nil || one.Ratios == nil || one.Floor == nil {
		t.Fatalf("one report: %v\n%s", err, out.String())
	}
	out.Reset()
	PrintReports(&out, []*PairedReport{r, r}, true)
	var two []PairedReport
	if err := json.Unmarshal(out.Bytes(), &two); err != nil || len(two) != 2 {
		t.Fatalf("two reports: %v\n%s", err, out.String())
	}
}
