package load

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// side is one half of a comparison, Airlock or its baseline. run drives
// it until until (or until ctx ends), recording only when measure is
// set and only what completed by until, then waits for its work in
// flight, so the next side starts on an idle machine.
type side interface {
	run(ctx context.Context, until time.Time, measure bool)
}

// plan is how long each side runs: warmup once, then duration measured,
// in turns of slice.
type plan struct {
	warmup, duration, slice time.Duration
}

// alternate warms each side up, then gives the sides turns of p.slice
// until each was measured for p.duration or ctx ends. It returns each
// side's measured time; a turn cut short by ctx counts up to then.
func alternate(ctx context.Context, p plan, sides []side, m *meter) []time.Duration {
	measured := make([]time.Duration, len(sides))
	for i, s := range sides {
		if p.warmup > 0 && ctx.Err() == nil {
			m.turn(i, false)
			s.run(ctx, time.Now().Add(p.warmup), false)
		}
	}
	for more := true; more && ctx.Err() == nil; {
		more = false
		for i, s := range sides {
			left := p.duration - measured[i]
			if left <= 0 || ctx.Err() != nil {
				continue
			}
			more = true
			m.turn(i, true)
			start := time.Now()
			until := start.Add(min(p.slice, left))
			s.run(ctx, until, true)
			end := until
			if now := time.Now(); ctx.Err() != nil && now.Before(end) {
				end = now
			}
			measured[i] += end.Sub(start)
		}
	}
	m.turn(-1, false)
	return measured
}

// meter counts what each side has measured so far, for the progress
// line.
type meter struct {
	unit   string
	names  []string
	counts []atomic.Int64
	active atomic.Int32 // the side running, -1 for none
	warm   atomic.Bool  // the active side is warming up
}

func newMeter(unit string, names ...string) *meter {
	m := &meter{unit: unit, names: names, counts: make([]atomic.Int64, len(names))}
	m.active.Store(-1)
	return m
}

func (m *meter) add(side int, n int64) { m.counts[side].Add(n) }

func (m *meter) turn(side int, measure bool) {
	m.warm.Store(!measure)
	m.active.Store(int32(side))
}

// progress prints a line to w once a second until stop is closed: the
// run's age, what each side measured so far, and the active side's rate
// over the last second.
func (m *meter) progress(w io.Writer, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	began, last, lastAt := time.Now(), make([]int64, len(m.names)), time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			fmt.Fprintln(w, m.line(now.Sub(began), now.Sub(lastAt), last))
			lastAt = now
		}
	}
}

// line formats one progress line and moves last on to the counts now.
func (m *meter) line(age, since time.Duration, last []int64) string {
	s := fmt.Sprintf("load %3.0fs:", age.Seconds())
	active := int(m.active.Load())
	for i, name := range m.names {
		n := m.counts[i].Load()
		s += fmt.Sprintf("  %s %d %s", name, n, m.unit)
		if i == active && !m.warm.Load() {
			s += fmt.Sprintf(" (%.0f/s)", float64(n-last[i])/since.Seconds())
		}
		if i == active && m.warm.Load() {
			s += " (warming up)"
		}
		last[i] = n
	}
	return s
}

// startProgress runs the progress line unless w is nil, and returns how
// to stop it.
func startProgress(m *meter, w io.Writer) (stop func()) {
	if w == nil {
		return func() {}
	}
	stopc, done := make(chan struct{}), make(chan struct{})
	go m.progress(w, stopc, done)
	return func() { close(stopc); <-done }
}

// eachShape runs one shape per concurrency in shapes, in order, and stops
// after one that Ctrl-C cut short: the report covers what was measured.
func eachShape[R any](shapes []int, o CallsOptions, interrupted func(R) bool, run func(CallsOptions) (R, error)) ([]R, error) {
	var reps []R
	for _, n := range shapes {
		o.Concurrency = n
		rep, err := run(o)
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
		if interrupted(rep) {
			break
		}
	}
	return reps, nil
}
