package channel

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/airlock/airlock/executors/wire"
)

// Executor answers calls; executors.Table is one.
type Executor interface {
	Call(ctx context.Context, c wire.Call) wire.Answer
}

// ExecFunc is an executor that may also fail outright.
type ExecFunc func(ctx context.Context, c wire.Call) (wire.Answer, error)

// FromExecutor adapts an Executor that never returns an error.
func FromExecutor(e Executor) ExecFunc {
	return func(ctx context.Context, c wire.Call) (wire.Answer, error) { return e.Call(ctx, c), nil }
}

// ExecutorDoor is the peer's side of the channel (createExecutorDoor): it
// turns call frames into answer frames through an executor and contains
// whatever the executor does wrong.
//
// # Notes
//
//   - A panic, an error, or an answer that would not pass
//     wire.ParseAnswer is answered exec-threw, so the broker always gets
//     one valid answer per call.
//   - The answer always carries the call's callId, whatever the executor
//     put there: only the broker's id can settle the broker's call.
type ExecutorDoor struct {
	run ExecFunc
	log *slog.Logger
}

// NewExecutorDoor wraps run; logger may be nil.
func NewExecutorDoor(run ExecFunc, logger *slog.Logger) *ExecutorDoor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ExecutorDoor{run: run, log: logger}
}

// Call answers c, never panicking and never with an invalid answer.
func (x *ExecutorDoor) Call(ctx context.Context, c wire.Call) (a wire.Answer) {
	defer func() {
		if v := recover(); v != nil {
			x.log.Error("executor panicked", "callId", c.CallID, "panic", fmt.Sprint(v))
			a = wire.Refuse(c.CallID, wire.ExecThrew, nil)
		}
	}()
	a, err := x.run(ctx, c)
	if err != nil {
		x.log.Warn("executor failed", "callId", c.CallID, "err", err)
		return wire.Refuse(c.CallID, wire.ExecThrew, nil)
	}
	a.V, a.CallID = wire.Version, c.CallID
	data, err := json.Marshal(a)
	if err == nil {
		_, err = wire.ParseAnswer(data)
	}
	if err != nil {
		x.log.Warn("executor answered an invalid envelope", "callId", c.CallID, "rule", string(wire.RuleOf(err)))
		return wire.Refuse(c.CallID, wire.ExecThrew, nil)
	}
	return a
}

// Handle answers one call frame and returns the answer frame to send. A
// frame that is not a valid call is answered with its refusal when its
// callId can be read; otherwise nil is returned (nothing to send: no call
// could be settled by it) and the frame is logged without its content.
func (x *ExecutorDoor) Handle(ctx context.Context, frame []byte) []byte {
	c, err := wire.ParseCall(frame)
	if err != nil {
		a := wire.RefuseBody(frame, err)
		if a.CallID == wire.UnreadableCallID {
			x.log.Warn("call frame dropped: no readable callId", "rule", string(a.Refused))
			return nil
		}
		return wire.AnswerFrame(a)
	}
	return wire.AnswerFrame(x.Call(ctx, c))
}
