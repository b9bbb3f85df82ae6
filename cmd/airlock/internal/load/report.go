package load

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"time"
)

// RunInfo is how a load run was measured; both reports embed it, so its
// fields stand inline in their JSON.
type RunInfo struct {
	DurationSeconds float64 `json:"durationSeconds"`
	WarmupSeconds   float64 `json:"warmupSeconds"`
	SliceSeconds    float64 `json:"sliceSeconds"`
	Interrupted     bool    `json:"interrupted,omitempty"`
}

// printHeader prints what was run, how it was measured, and whether
// Ctrl-C cut it short, then a blank line.
func (ri RunInfo) printHeader(w io.Writer, what string, withBaseline bool) {
	fmt.Fprintf(w, "%s, %s measured per side after %s warmup", what, secs(ri.DurationSeconds), secs(ri.WarmupSeconds))
	if withBaseline {
		fmt.Fprintf(w, ", in turns of %s", secs(ri.SliceSeconds))
	}
	fmt.Fprintln(w)
	if ri.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures cover the time measured before Ctrl-C")
	}
	fmt.Fprintln(w)
}

// sides yields a report's figures in print order: Airlock's, then the
// baseline's when there is one.
func sides[F any](airlock, baseline *F) iter.Seq2[string, *F] {
	return func(yield func(string, *F) bool) {
		if !yield("airlock", airlock) || baseline == nil {
			return
		}
		yield("baseline", baseline)
	}
}

// LatencySummary is a histogram in milliseconds, the unit one reads
// beside a dashboard.
type LatencySummary struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func summarize(h *histogram) LatencySummary {
	return LatencySummary{P50: ms(h.percentile(0.50)), P90: ms(h.percentile(0.90)),
		P99: ms(h.percentile(0.99)), Max: ms(h.max)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ratios are Airlock's figure divided by the baseline's, from one run:
// throughput below 1 and latency above 1 mean Airlock is slower.
type Ratios struct {
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
}

// compare is nil unless every ratio is defined: a side with nothing
// measured has no figure to divide by.
func compare(airlockRate, baseRate float64, airlock, base LatencySummary) *Ratios {
	if airlockRate <= 0 || baseRate <= 0 || airlock.P50 <= 0 || base.P50 <= 0 || airlock.P99 <= 0 || base.P99 <= 0 {
		return nil
	}
	return &Ratios{Throughput: airlockRate / baseRate, P50: airlock.P50 / base.P50, P99: airlock.P99 / base.P99}
}

// rate is count per second of elapsed, zero for no time.
func rate(count int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(count) / elapsed.Seconds()
}

// PrintJSON prints a report as indented JSON.
func PrintJSON(w io.Writer, v any) {
	out, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", out)
}

// PrintReports prints one run's reports (calls or paired): as one for
// one concurrency, one after the other (a JSON array with asJSON) for
// several.
func PrintReports[R interface{ Print(io.Writer) }](w io.Writer, reps []R, asJSON bool) {
	switch {
	case asJSON && len(reps) == 1:
		PrintJSON(w, reps[0])
	case asJSON:
		PrintJSON(w, reps)
	default:
		for i, rep := range reps {
			if i > 0 {
				fmt.Fprintln(w)
			}
			rep.Print(w)
		}
	}
}

// fmtMs prints a latency with three significant digits.
func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	case v >= 1:
		return fmt.Sprintf("%.2fms", v)
	}
	return fmt.Sprintf("%.0fµs", v*1000)
}

// printRatios is the line that answers the question of the run: Airlock
// over the side named against.
func printRatios(w io.Writer, against, unit string, r *Ratios) {
	if r == nil {
		fmt.Fprintf(w, "ratio Airlock/%s: none (a side measured nothing)\n", against)
		return
	}
	fmt.Fprintf(w, "ratio Airlock/%s: %s %.3g×   p50 %.3g×   p99 %.3g×\n", against, unit, r.Throughput, r.P50, r.P99)
}
