package load

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDueIsASchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		k    int64
		rate int
		want time.Duration
	}{{0, 50, 0}, {1, 50, 20 * time.Millisecond}, {50, 50, time.Second}, {3, 10000, 300 * time.Microsecond},
		{1, 3, 333333333}, {3, 3, time.Second}, {86400 * 1000, 1000, 24 * time.Hour}} {
		if got := due(start, c.k, c.rate).Sub(start); got != c.want {
			t.Errorf("message %d at %d/s due after %v, want %v", c.k, c.rate, got, c.want)
		}
	}
}

func TestRateChecked(t *testing.T) {
	o := RelayOptions{Options: Options{Duration: time.Second}, Sessions: 1, Views: 1}
	for _, rate := range []int{-1, MaxRate + 1} {
		o.Rate = rate
		if err := o.Check(); !errors.Is(err, errRate) {
			t.Errorf("rate %d: %v", rate, err)
		}
	}
	for _, rate := range []int{0, 1, MaxRate} {
		o.Rate = rate
		if err := o.Check(); err != nil {
			t.Errorf("rate %d: %v", rate, err)
		}
	}
	if window(0) != RelayWindow || window(1) != RateWindow {
		t.Error("windows")
	}
}

func TestParseShapes(t *testing.T) {
	got, err := ParseShapes(StandardShapes)
	if err != nil || len(got) != 3 || got[0] != (Shape{1, 10000}) || got[1] != (Shape{100, 1000}) || got[2] != (Shape{1000, 50}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseShapes(" 2x5 "); err != nil || got[0] != (Shape{2, 5}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "1", "x5", "1x", "0x5", "1x0", "1x-1", "-1x5", "1x5,", "1x5,,2x3", "1X5", "1x1000001", "1.5x3", "1x5x6"} {
		if _, err := ParseShapes(bad); !errors.Is(err, errShapes) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestPacedRunAgainstForwarder drives the bare forwarder in this process
// at a rate: every view receives every message in order, and the host
// never runs ahead of its schedule (however slow the machine, which can
// only make it send fewer).
func TestPacedRunAgainstForwarder(t *testing.T) {
	ctx := context.Background()
	o := RelayOptions{Options: Options{Duration: time.Second}, Sessions: 2, Views: 3, FrameBytes: 256, Rate: 200}
	m := newMeter("deliveries", "airlock", "baseline") // connectBare counts as side 1
	fw, top, err := connectBare(ctx, o, m)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	defer top.close()
	start := time.Now()
	top.run(ctx, start.Add(300*time.Millisecond), true)
	elapsed := time.Since(start)
	top.close()
	f := top.figures("bare", elapsed)
	limit := int64(o.Sessions) * (int64(elapsed.Seconds()*float64(o.Rate)) + 1)
	if f.MessagesSent <= 0 || f.MessagesSent > limit {
		t.Fatalf("%d messages sent in %v at %d/s per host (at most %d)", f.MessagesSent, elapsed, o.Rate, limit)
	}
	// Deliveries after the turn's end are not counted; the drain below
	// checks that they all came.
	if f.Deliveries <= 0 || f.Deliveries > f.MessagesSent*int64(o.Views) || f.DroppedViews != 0 || f.SendErrors != 0 {
		t.Fatalf("%+v", f)
	}
	for _, s := range top.sessions {
		for _, v := range s.views {
			if v.got.Load() != s.seq {
				t.Fatalf("a view got up to %d of %d", v.got.Load(), s.seq)
			}
		}
	}
}

func TestShapesReportPrint(t *testing.T) {
	fig := func(p50, p99 float64) RelayFigures {
		return RelayFigures{MessagesSent: 200, Seconds: 2, LatencyMs: LatencySummary{P50: p50, P90: p99, P99: p99, Max: p99}}
	}
	run := func(views, rate int, dropped int) *RelayReport {
		a, b := fig(0.3, 2), fig(0.2, 1)
		a.DroppedViews = dropped
		return &RelayReport{Sessions: 1, Views: views, Rate: rate, FrameBytes: 256, Window: RateWindow,
			RunInfo: RunInfo{DurationSeconds: 2, WarmupSeconds: 1, SliceSeconds: 2},
			Airlock: a, Baseline: &b, Ratios: compare(1, 1, a.LatencyMs, b.LatencyMs)}
	}
	r := &ShapesReport{Broker: "http://127.0.0.1:1", Runs: []*RelayReport{run(1, 10000, 0), run(100, 1000, 2)}}
	var out bytes.Buffer
	r.Print(&out)
	for _, want := range []string{"relay on http://127.0.0.1:1: 256-byte focusNode frames, window 128",
		"1×1  ", "10000", "300µs", "2.00ms", "1.50×", "2.00×", "1×100", "100 airlock: dropped views"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
