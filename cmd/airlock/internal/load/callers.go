package load

import (
	"context"
	"sync"
	"time"

	"github.com/airlock/airlock/executors/baseline"
)

// callOp makes one call for caller w and says how it ended: an outcome
// ("ok", a rule id, "failed"), or "" with the error when no answer came.
type callOp func(ctx context.Context, w int) (outcome string, err error)

// callers is a side of the calls workload: a fixed number of closed-loop
// callers, each starting its next call when the last one ends.
type callers struct {
	op      callOp
	tallies []tally // one per caller, kept across turns
	meter   *meter
	index   int // the side's index in meter
}

func newCallers(n int, op callOp, m *meter, index int) *callers {
	return &callers{op: op, tallies: make([]tally, n), meter: m, index: index}
}

func (c *callers) run(ctx context.Context, until time.Time, measure bool) {
	var wg sync.WaitGroup
	for w := range c.tallies {
		wg.Go(func() { c.loop(ctx, w, until, measure) })
	}
	wg.Wait()
}

// loop calls until until. A call that ends after until, or after ctx,
// is not counted: the turn's time is over.
func (c *callers) loop(ctx context.Context, w int, until time.Time, measure bool) {
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(until) {
			return
		}
		outcome, err := c.op(ctx, w)
		end := time.Now()
		if !measure || end.After(until) || ctx.Err() != nil {
			continue
		}
		c.tallies[w].record(end.Sub(start), outcome, err)
		c.meter.add(c.index, 1)
	}
}

// baselineOp runs the tool with plain wazero: a fresh instance per call,
// or with reuse one instance per caller, made on its first call.
func baselineOp(r *baseline.Runner, tool string, args []byte, reuse bool, callers int) (callOp, func(context.Context)) {
	insts := make([]*baseline.Instance, callers)
	op := func(ctx context.Context, w int) (string, error) {
		var err error
		switch {
		case !reuse:
			_, err = r.Call(ctx, tool, args)
		case insts[w] == nil:
			if insts[w], err = r.NewInstance(ctx); err == nil {
				_, err = insts[w].Call(ctx, tool, args)
			}
		default:
			_, err = insts[w].Call(ctx, tool, args)
		}
		if err != nil {
			if reuse && insts[w] != nil {
				_ = insts[w].Close(ctx)
				insts[w] = nil // a failed instance is not reused
			}
			return "failed", err
		}
		return "ok", nil
	}
	closeAll := func(ctx context.Context) {
		for _, inst := range insts {
			if inst != nil {
				_ = inst.Close(ctx)
			}
		}
	}
	return op, closeAll
}
