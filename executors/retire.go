package executors

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/airlock/airlock/executors/wire"
)

// lifecycle counts a program's in-flight calls so Close can retire it
// without cutting them off: once retired, new calls are refused and the
// last call to leave releases the module.
type lifecycle struct {
	mu       sync.Mutex
	inflight int
	retired  wire.Rule // what new calls are refused with once retired
	drained  chan struct{}
	release  sync.Once
}

// enter admits a call, or returns the rule that refuses it.
func (p *Program) enter() wire.Rule {
	l := &p.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retired != "" {
		return l.retired
	}
	l.inflight++
	return ""
}

func (p *Program) leave() {
	l := &p.life
	l.mu.Lock()
	l.inflight--
	done := l.retired != "" && l.inflight == 0
	if done {
		close(l.drained)
	}
	l.mu.Unlock()
	if done {
		p.release(context.Background())
	}
}

// Close retires the program: new calls are refused unattributed-call at
// once, calls in flight finish. It waits for them until ctx ends, then
// returns ctx's cause and leaves the release of the module, its pool and
// roots to the last call out; a program runs no goroutine of its own, and
// the engine it runs in is forced by the Runtime's Close (RATIONALE.md, "What
// does Close do when its context ends?").
func (p *Program) Close(ctx context.Context) error {
	err := p.retire(ctx, wire.UnattributedCall)
	p.rt.untrack(p)
	return err
}

func (p *Program) retire(ctx context.Context, rule wire.Rule) error {
	l := &p.life
	l.mu.Lock()
	if l.retired == "" {
		l.retired = rule
		l.drained = make(chan struct{})
		if l.inflight == 0 {
			close(l.drained)
		}
	}
	drained := l.drained
	l.mu.Unlock()
	select {
	case <-drained:
		p.release(ctx)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("executors: close: %w", context.Cause(ctx))
	}
}

// release frees what Load acquired, once.
func (p *Program) release(ctx context.Context) {
	p.life.release.Do(func() {
		if p.pool != nil {
			p.pool.close()
		}
		var errs []error
		if p.compiled != nil {
			errs = append(errs, p.compiled.Close(context.WithoutCancel(ctx)))
		}
		if p.mounts != nil {
			errs = append(errs, p.mounts.close())
		}
		if err := errors.Join(errs...); err != nil {
			p.log.Warn("releasing program", "err", err)
		}
	})
}
