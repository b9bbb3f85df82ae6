package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
)

// Unit tests of the load tool's measuring and reporting; the end-to-end
// runs against a real broker are in cmd/airlock/load_e2e_test.go.

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for i := range histBuckets {
		mid := bucketMid(i)
		if got := bucketOf(mid); got != i {
			t.Fatalf("bucket %d: middle %d falls in bucket %d", i, mid, got)
		}
		if i <= prev {
			t.Fatal("buckets out of order")
		}
		prev = i
	}
	if bucketOf(histMax) != histBuckets-1 {
		t.Fatalf("the largest value told apart is in bucket %d of %d", bucketOf(histMax), histBuckets)
	}
	// Consecutive values never skip a bucket.
	for v := uint64(0); v < 1<<14; v++ {
		if d := bucketOf(v+1) - bucketOf(v); d != 0 && d != 1 {
			t.Fatalf("bucketOf(%d)=%d, bucketOf(%d)=%d", v, bucketOf(v), v+1, bucketOf(v+1))
		}
	}
}

func TestHistogramPercentiles(t *testing.T) {
	var h histogram
	if h.percentile(0.5) != 0 || h.max != 0 {
		t.Fatal("an empty histogram reports something")
	}
	for i := 1; i <= 1000; i++ { // 1µs … 1ms, uniformly
		h.record(time.Duration(i) * time.Microsecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Microsecond, 0.9: 900 * time.Microsecond, 0.99: 990 * time.Microsecond} {
		got := h.percentile(q)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 1.0/128 {
			t.Errorf("p%v = %v, want %v within 1/128", q*100, got, want)
		}
	}
	if h.max != time.Millisecond || h.percentile(1) != time.Millisecond {
		t.Errorf("max %v, p100 %v: want exactly 1ms", h.max, h.percentile(1))
	}
	if h.n != 1000 {
		t.Errorf("n = %d", h.n)
	}
}

func TestHistogramSmallExactAndHugeClamped(t *testing.T) {
	var h histogram
	for _, v := range []time.Duration{3, 7, 7, 40} {
		h.record(v)
	}
	if h.percentile(0.5) != 7 || h.percentile(0.25) != 3 || h.percentile(1) != 40 {
		t.Fatalf("small values are not exact: %v %v %v", h.percentile(0.25), h.percentile(0.5), h.percentile(1))
	}
	var big histogram
	big.record(48 * time.Hour)
	big.record(-time.Second) // a clock that went backwards counts as 0
	if big.max != 48*time.Hour || big.percentile(1) != 48*time.Hour || big.percentile(0.5) != 0 {
		t.Fatalf("max %v p100 %v p50 %v", big.max, big.percentile(1), big.percentile(0.5))
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, both, empty histogram
	for i := range 500 {
		d := time.Duration(i*i) * time.Microsecond
		both.record(d)
		if i%3 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	a.merge(&b)
	a.merge(&empty)
	for _, q := range []float64{0.1, 0.5, 0.9, 0.99, 1} {
		if a.percentile(q) != both.percentile(q) {
			t.Fatalf("p%v: merged %v, recorded together %v", q*100, a.percentile(q), both.percentile(q))
		}
	}
	if a.n != both.n || a.max != both.max {
		t.Fatal("counts differ")
	}
}

func TestTallyFigures(t *testing.T) {
	tallies := make([]tally, 2)
	tallies[0].record(time.Millisecond, "ok", nil)
	tallies[0].record(2*time.Millisecond, "overloaded", nil)
	tallies[1].record(time.Hour, "", errors.New("broker unreachable\nmore"))
	tallies[1].record(3*time.Millisecond, "ok", nil)
	tallies[1].record(4*time.Millisecond, "failed", errors.New("trap\nwasm stack trace"))
	f := sumTallies("x", tallies, 2*time.Second)
	if f.Calls != 4 || f.CallsPerSecond != 2 || f.TransportErrors != 1 {
		t.Fatalf("%+v", f)
	}
	if f.Outcomes["ok"] != 2 || f.Outcomes["overloaded"] != 1 || f.Outcomes["failed"] != 1 || len(f.Outcomes) != 3 {
		t.Fatalf("outcomes %v", f.Outcomes)
	}
	if f.LatencyMs.Max != 4 {
		t.Fatalf("a transport error's time counted in the latency: %+v", f.LatencyMs)
	}
	if f.FirstError != "broker unreachable" {
		t.Fatalf("first error %q", f.FirstError)
	}
	if f.AllOK() {
		t.Fatal("allOK with refusals")
	}
	ok := sumTallies("y", []tally{{}}, time.Second)
	ok.Outcomes, ok.Calls = map[string]int64{"ok": 3}, 3
	if !ok.AllOK() {
		t.Fatal("not AllOK")
	}
}

func TestCompare(t *testing.T) {
	a := LatencySummary{P50: 2, P99: 9}
	b := LatencySummary{P50: 1, P99: 3}
	r := compare(50, 100, a, b)
	if r == nil || r.Throughput != 0.5 || r.P50 != 2 || r.P99 != 3 {
		t.Fatalf("%+v", r)
	}
	if compare(50, 0, a, b) != nil || compare(50, 100, a, LatencySummary{}) != nil {
		t.Fatal("a ratio to nothing")
	}
	if rate(10, 0) != 0 || rate(10, 2*time.Second) != 5 {
		t.Fatal("rate")
	}
}

// fakeSide records its turns and returns at once, so the schedule is
// checked without sleeping.
type fakeSide struct {
	name  string
	log   *[]string
	onRun func(measure bool)
}

func (f fakeSide) run(ctx context.Context, until time.Time, measure bool) {
	kind := "warmup"
	if measure {
		kind = "measure"
	}
	*f.log = append(*f.log, f.name+" "+kind)
	if f.onRun != nil {
		f.onRun(measure)
	}
}

func TestAlternate(t *testing.T) {
	var log []string
	m := newMeter("calls", "a", "b")
	p := plan{warmup: time.Millisecond, duration: 5 * time.Second, slice: 2 * time.Second}
	got := alternate(context.Background(), p, []side{fakeSide{"a", &log, nil}, fakeSide{"b", &log, nil}}, m)
	want := "a warmup,b warmup,a measure,b measure,a measure,b measure,a measure,b measure"
	if strings.Join(log, ",") != want {
		t.Fatalf("turns %v", log)
	}
	// A turn that returns early still counts its whole slice: the side
	// was given that time; the last turn is what is left of duration.
	if got[0] != 5*time.Second || got[1] != 5*time.Second {
		t.Fatalf("measured %v", got)
	}
	if m.active.Load() != -1 {
		t.Fatal("a side left active")
	}
}

func TestAlternateInterrupted(t *testing.T) {
	var log []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	turns := 0
	a := fakeSide{"a", &log, func(measure bool) {
		if measure {
			if turns++; turns == 2 {
				cancel()
			}
		}
	}}
	p := plan{duration: time.Hour, slice: time.Hour / 4}
	got := alternate(ctx, p, []side{a, fakeSide{"b", &log, nil}}, newMeter("calls", "a", "b"))
	if strings.Join(log, ",") != "a measure,b measure,a measure" {
		t.Fatalf("turns %v", log)
	}
	if got[0] <= time.Hour/4 || got[0] >= time.Hour/2 || got[1] != time.Hour/4 {
		t.Fatalf("measured %v: the cut turn should count up to the interruption", got)
	}
}

func TestMeterLine(t *testing.T) {
	m := newMeter("calls", "airlock", "baseline")
	last := make([]int64, 2)
	m.turn(0, false)
	if line := m.line(time.Second, time.Second, last); !strings.Contains(line, "airlock 0 calls (warming up)") {
		t.Fatal(line)
	}
	m.turn(1, true)
	m.add(1, 30)
	line := m.line(2*time.Second, 2*time.Second, last)
	if !strings.Contains(line, "baseline 30 calls (15/s)") || !strings.Contains(line, "airlock 0 calls ") {
		t.Fatal(line)
	}
	if last[1] != 30 {
		t.Fatal("last not moved on")
	}
}

func TestCallsReportPrint(t *testing.T) {
	base := CallsFigures{Label: "plain wazero builtin:notes", Calls: 10, CallsPerSecond: 5,
		LatencyMs: LatencySummary{P50: 1, P90: 2, P99: 4, Max: 8}, Outcomes: map[string]int64{"ok": 10}}
	r := &CallsReport{Tool: "read_notes", Broker: "http://127.0.0.1:1", DescriptorID: "notes", Concurrency: 4,
		RunInfo: RunInfo{DurationSeconds: 10, WarmupSeconds: 1, SliceSeconds: 2}, Baseline: &base,
		Airlock: CallsFigures{Calls: 50, CallsPerSecond: 25, LatencyMs: LatencySummary{P50: 0.5, P90: 1, P99: 2, Max: 3},
			Outcomes: map[string]int64{"ok": 49, "overloaded": 1}}}
	r.Ratios = compare(25, 5, r.Airlock.LatencyMs, base.LatencyMs)
	bare := CallsFigures{Label: "behind a bare net/http server", Calls: 40, CallsPerSecond: 20,
		LatencyMs: LatencySummary{P50: 0.4, P90: 1, P99: 2, Max: 3}, Outcomes: map[string]int64{"ok": 40}}
	r.HTTPFloor = &bare
	r.HTTPFloorRatios = compare(25, 20, r.Airlock.LatencyMs, bare.LatencyMs)
	var out bytes.Buffer
	r.Print(&out)
	for _, want := range []string{"bare http: behind a bare net/http server", "ratio Airlock/bare http: calls/s 1.25×   p50 1.25×   p99 1×",
		"400µs", "read_notes on http://127.0.0.1:1 (descriptor notes), 4 callers, 10s measured per side after 1s warmup, in turns of 2s",
		"ratio Airlock/baseline: calls/s 5×   p50 0.5×   p99 0.5×", `airlock outcomes: {"ok":49,"overloaded":1}`,
		"baseline: plain wazero builtin:notes", "note: not every call was answered ok", "500µs", "8.00ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var js bytes.Buffer
	PrintJSON(&js, r)
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"airlock", "baseline", "ratios", "httpFloor", "httpFloorRatios", "concurrency", "durationSeconds"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if _, ok := back["baselineSkipped"]; ok {
		t.Error("baselineSkipped with a baseline")
	}
}

func TestPadFor(t *testing.T) {
	for _, size := range []int{200, 256, 4096} {
		id := "ws_" + strings.Repeat("a", 22)
		frame := localclient.Envelope(id, "focusNode", focus{NodeID: "layer-7", T: 12345678901, Pad: padFor(id, size)}, 123456)
		if len(frame) != size {
			t.Errorf("--size %d makes %d-byte frames", size, len(frame))
		}
	}
	if padFor("ws_x", 10) != "" {
		t.Error("a pad below the envelope's own size")
	}
}

// TestMaxMessageHoldsEveryFrameOfTheRun: the bare forwarder's read limit
// is at least every frame a run of that size sends (the longest ids,
// times and sequence numbers included), and a frame bigger than the run's
// is over it.
func TestMaxMessageHoldsEveryFrameOfTheRun(t *testing.T) {
	for _, size := range []int{0, 10, 200, 256, 4096, 1 << 20} {
		for _, id := range []string{"ws_" + strings.Repeat("a", 22), fmt.Sprintf("ws_bare%018d", 999)} {
			frame := localclient.Envelope(id, "focusNode", focus{NodeID: "layer-7", T: math.MaxInt64, Pad: padFor(id, size)}, math.MaxInt64)
			if int64(len(frame)) > MaxMessage(size) {
				t.Errorf("--size %d: a %d-byte frame is over the limit %d", size, len(frame), MaxMessage(size))
			}
		}
		if MaxMessage(size) > int64(size)+512 {
			t.Errorf("--size %d: the limit %d leaves a stranger more than an envelope over the run's frames", size, MaxMessage(size))
		}
	}
}

func TestFmtMs(t *testing.T) {
	for v, want := range map[float64]string{0.0123: "12µs", 0.5: "500µs", 1.234: "1.23ms", 12.34: "12.3ms", 123.4: "123ms"} {
		if got := fmtMs(v); got != want {
			t.Errorf("fmtMs(%v) = %q, want %q", v, got, want)
		}
	}
}
