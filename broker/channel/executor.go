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

// ExecutorDoor is the peer's side of the channel (the seed calls it
// createExecutorDoor): it turns call frames into answer frames through an
// executor and contains whatever the executor does wrong.
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
func (x *ExecutorDoor) Call(ctx context.Context, c wire.Call) wire.Answer {
	a, _ := x.answer(ctx, c)
	return a
}

// answer runs the executor under containment and returns its answer with
// the encoded frame, which has passed wire.ParseAnswer.
func (x *ExecutorDoor) answer(ctx context.Context, c wire.Call) (wire.Answer, []byte) {
	a, err := x.contained(ctx, c)
	if err != nil {
		x.log.Warn("executor failed", "callId", c.CallID, "err", err)
		a = wire.Refuse(c.CallID, wire.ExecThrew, nil)
		return a, wire.AnswerFrame(a)
	}
	a.V, a.CallID = wire.Version, c.CallID
	frame, err := json.Marshal(a)
	if err == nil {
		_, err = wire.ParseAnswer(frame)
	}
	if err != nil {
		x.log.Warn("executor answered an invalid envelope", "callId", c.CallID, "rule", string(wire.RuleOf(err)))
		a = wire.Refuse(c.CallID, wire.ExecThrew, nil)
		return a, wire.AnswerFrame(a)
	}
	return a, frame
}

// contained runs the executor, turning a panic into an error.
func (x *ExecutorDoor) contained(ctx context.Context, c wire.Call) (a wire.Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("channel: executor panicked: %v", v)
		}
	}()
	return x.run(ctx, c)
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
	_, out := x.answer(ctx, c)
	return out
}

// Frame answers an already-validated call and returns the answer frame.
func (x *ExecutorDoor) Frame(ctx context.Context, c wire.Call) []byte {
	_, out := x.answer(ctx, c)
	return out
}
