// Package load is the engine of `airlock load`: it drives a running
// broker for a fixed time and measures, in the same run and in turns, a
// baseline doing the same work without Airlock, so each figure comes with
// a ratio that does not depend on how busy the machine was. It has no
// flags: the command fills the options, calls Calls or Relay, and prints
// the report.
package load

import (
	"errors"
	"io"
	"time"
)

// Options are what both workloads share.
type Options struct {
	// Duration is how long each side is measured; it must be positive.
	Duration time.Duration
	// Warmup is how long each side runs unmeasured first; zero for none.
	Warmup time.Duration
	// Progress receives a line once a second while the run goes, and
	// notes on the baseline; nil for none.
	Progress io.Writer
}

// errDuration refuses a run that could measure nothing.
var errDuration = errors.New("load: the duration must be positive and the warmup not negative")

func (o Options) check() error {
	if o.Duration <= 0 || o.Warmup < 0 {
		return errDuration
	}
	return nil
}

// slice is how long one side runs before the other takes its turn: long
// enough that the calls cut off at each turn (at most one per caller)
// weigh little, short enough to follow the machine's load.
const slice = 2 * time.Second

// plan is the schedule of the run: with a baseline the sides alternate
// in slices; alone, Airlock runs in one stretch.
func (o Options) plan(withBaseline bool) plan {
	p := plan{warmup: o.Warmup, duration: o.Duration, slice: o.Duration}
	if withBaseline {
		p.slice = min(slice, o.Duration)
	}
	return p
}
