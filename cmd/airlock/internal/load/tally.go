package load

import (
	"maps"
	"strings"
	"time"
)

// tally is what one caller measured: latency of every answered call,
// each answer's outcome ("ok", a rule id, "failed" for the baseline),
// and the calls that got no answer at all.
type tally struct {
	lat      histogram
	outcomes map[string]int64
	errors   int64
	firstErr string
}

// record counts one call. An empty outcome is a call that got no answer
// (a transport error); otherwise err, if any, is the outcome's detail.
func (t *tally) record(d time.Duration, outcome string, err error) {
	if err != nil && t.firstErr == "" {
		// The first line: wazero appends the guest's stack trace.
		t.firstErr, _, _ = strings.Cut(err.Error(), "\n")
	}
	if outcome == "" {
		t.errors++
		return
	}
	if t.outcomes == nil {
		t.outcomes = map[string]int64{}
	}
	t.outcomes[outcome]++
	t.lat.record(d)
}

func (t *tally) merge(o *tally) {
	t.lat.merge(&o.lat)
	if t.outcomes == nil {
		t.outcomes = map[string]int64{}
	}
	for k, v := range o.outcomes {
		t.outcomes[k] += v
	}
	t.errors += o.errors
	if t.firstErr == "" {
		t.firstErr = o.firstErr
	}
}

// CallsFigures are one side's figures in the report.
type CallsFigures struct {
	Label           string           `json:"label"`
	Calls           int64            `json:"calls"`
	Seconds         float64          `json:"seconds"`
	CallsPerSecond  float64          `json:"callsPerSecond"`
	LatencyMs       LatencySummary   `json:"latencyMs"`
	Outcomes        map[string]int64 `json:"outcomes"`
	TransportErrors int64            `json:"transportErrors"`
	FirstError      string           `json:"firstError,omitempty"`
}

// sumTallies sums the callers' tallies over the measured time. Calls are
// the answered ones, whatever the answer; transport errors are apart.
func sumTallies(label string, tallies []tally, measured time.Duration) CallsFigures {
	var all tally
	for i := range tallies {
		all.merge(&tallies[i])
	}
	calls := int64(all.lat.n)
	return CallsFigures{Label: label, Calls: calls, Seconds: measured.Seconds(),
		CallsPerSecond: rate(calls, measured), LatencyMs: summarize(&all.lat),
		Outcomes: maps.Clone(all.outcomes), TransportErrors: all.errors, FirstError: all.firstErr}
}

// AllOK reports whether every call was answered ok.
func (f *CallsFigures) AllOK() bool {
	return f.TransportErrors == 0 && len(f.Outcomes) == 1 && f.Outcomes["ok"] == f.Calls
}
