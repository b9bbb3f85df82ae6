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
// last call to leave releases the module. It also holds the calls that
// are running a guest, so a late Runtime.Close can cancel them (halt).
type lifecycle struct {
	mu       sync.Mutex
	inflight int
	retired  wire.Rule // what new calls are refused with once retired
	drained  chan struct{}
	release  sync.Once
	running  map[*callState]struct{}
	halted   bool
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

// unready is the rule that refuses a call whose module will not run: the
// rule the program was retired with, else unattributed-call (compilation
// refused the module, so the descriptor was never admitted).
func (p *Program) unready() wire.Rule {
	l := &p.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retired != "" {
		return l.retired
	}
	return wire.UnattributedCall
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

// begin registers a call about to run its guest, so halt can cancel it;
// once halted, the call is cancelled at once.
func (p *Program) begin(s *callState) {
	l := &p.life
	l.mu.Lock()
	halted := l.halted
	if !halted {
		if l.running == nil {
			l.running = map[*callState]struct{}{}
		}
		l.running[s] = struct{}{}
	}
	l.mu.Unlock()
	if halted {
		s.cancel(errShuttingDown)
	}
}

func (p *Program) end(s *callState) {
	l := &p.life
	l.mu.Lock()
	delete(l.running, s)
	l.mu.Unlock()
}

// halt cancels every call running here, and any that begins later, with
// errShuttingDown: wazero then stops the guest at its next function entry
// or loop header, and a host function returns early, so the calls end
// promptly without the engine being closed under them.
func (p *Program) halt() {
	l := &p.life
	l.mu.Lock()
	l.halted = true
	running := make([]*callState, 0, len(l.running))
	for s := range l.running {
		running = append(running, s)
	}
	l.mu.Unlock()
	for _, s := range running {
		s.cancel(errShuttingDown)
	}
}

// Close retires the program: new calls are refused unattributed-call at
// once, calls in flight finish. It waits for them until ctx ends, then
// returns ctx's cause and leaves the release of the module, its pool and
// roots to the last call out; a program runs no goroutine of its own, and
// the calls left are forced by the Runtime's Close, which still tracks the
// program until then (RATIONALE.md, "What does Close do when its context
// ends?").
func (p *Program) Close(ctx context.Context) error {
	return p.drain(ctx, p.retire(wire.UnattributedCall))
}

// retire stops admitting calls (new ones are refused rule, the first rule
// set wins) and returns a channel closed once no call is in flight.
func (p *Program) retire(rule wire.Rule) <-chan struct{} {
	l := &p.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retired == "" {
		l.retired = rule
		l.drained = make(chan struct{})
		if l.inflight == 0 {
			close(l.drained)
		}
		if p.stopCompile != nil {
			p.stopCompile() // calls waiting for it are refused rule
		}
	}
	return l.drained
}

// drain waits until drained is closed, then releases the program, or
// until ctx ends.
func (p *Program) drain(ctx context.Context, drained <-chan struct{}) error {
	select {
	case <-drained:
		p.release(ctx)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("executors: close: %w", context.Cause(ctx))
	}
}

// release frees what Load acquired, once, and stops the runtime tracking
// the program.
func (p *Program) release(ctx context.Context) {
	p.life.release.Do(func() {
		if p.stopCompile != nil {
			p.stopCompile()
			<-p.ready // within one function's compilation
		}
		p.rt.untrack(p)
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
