package wire

import (
	"context"
	"fmt"
)

// Executor answers calls. The broker's local executors (one admitted
// program, or the table of them), a peer on the executor channel and the
// handler behind a channel door are all Executors, so one router and one
// door serve them all.
type Executor interface {
	// Call answers c. It settles exactly once and is not expected to
	// panic; whoever runs it for a caller does so through Contain.
	Call(ctx context.Context, c Call) Answer
}

// ExecutorFunc adapts a function to an Executor.
type ExecutorFunc func(ctx context.Context, c Call) Answer

// Call runs f.
func (f ExecutorFunc) Call(ctx context.Context, c Call) Answer { return f(ctx, c) }

// Contain runs e for c and turns a panic into an exec-threw answer, so one
// broken executor can neither take its caller down nor leave a call
// unsettled. It is the call path's one panic catcher: the router and the
// channel door run every call through it, and nothing below them recovers.
// The answer always carries c's callId. panicked describes the panic, for
// the caller's log, and is nil when there was none.
func Contain(ctx context.Context, e Executor, c Call) (a Answer, panicked error) {
	defer func() {
		if v := recover(); v != nil {
			a = Refuse(c.CallID, ExecThrew, nil)
			panicked = fmt.Errorf("executor panicked: %v", v)
		}
	}()
	a = e.Call(ctx, c)
	a.CallID = c.CallID
	return a, nil
}
