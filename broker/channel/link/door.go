// Package link is what both ends of /channel share: the executor's door
// (call frames in, answer frames out), the writer, the keepalive and the
// close reasons. The broker's server (broker/channel) and the
// environment's client (envclient, `airlock env`) both use it. Frames are
// read and writes bounded by broker/internal/frame, which the relay's
// sockets use too.
//
// It imports only the standard library, coder/websocket, executors/wire
// and broker/internal/frame, so an environment builds none of the
// broker's server (routing, pairings, configuration, metrics);
// envclient's TestEnvPathImports asserts it.
package link

import (
	"context"
	"log/slog"

	"github.com/airlock/airlock/executors/wire"
)

// Door is the executor's side of the channel (the page's and an
// environment's): it turns call frames into answer frames through an
// executor and contains whatever the executor does wrong.
//
// # Notes
//
//   - A panic (caught by wire.Contain) or an answer that would not pass
//     wire.ParseAnswer is answered exec-threw, so the broker always gets
//     one valid answer per call.
//   - The answer always carries the call's callId, whatever the executor
//     put there: only the broker's id can settle the broker's call.
type Door struct {
	run wire.Executor
	log *slog.Logger
}

// NewDoor wraps run; logger may be nil.
func NewDoor(run wire.Executor, logger *slog.Logger) *Door {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Door{run: run, log: logger}
}

// Call answers c, never panicking and never with an invalid answer.
func (x *Door) Call(ctx context.Context, c wire.Call) wire.Answer {
	a, _ := x.answer(ctx, c, nil)
	return a
}

// answer runs the executor under containment and returns its answer with
// the encoded frame appended to dst, which would pass wire.ParseAnswer:
// the answer is held to wire.AnswerCheck, the same checks applied to the
// answer as built instead of to its encoding walked again.
func (x *Door) answer(ctx context.Context, c wire.Call, dst []byte) (wire.Answer, []byte) {
	a, panicked := wire.Contain(ctx, x.run, c)
	if panicked != nil {
		x.log.Warn("executor failed", "callId", c.CallID, "err", panicked)
		return a, wire.AppendAnswerFrame(dst, a)
	}
	a.V = wire.Version
	if err := wire.AnswerCheck(a); err != nil {
		x.log.Warn("executor answered an invalid envelope", "callId", c.CallID, "rule", string(wire.RuleOf(err)))
		a = wire.Refuse(c.CallID, wire.ExecThrew, nil)
	}
	return a, wire.AppendAnswerFrame(dst, a)
}

// Handle answers one call frame and returns the answer frame to send. A
// frame that is not a valid call is answered with its refusal when its
// callId can be read; otherwise nil is returned (nothing to send: no call
// could be settled by it) and the frame is logged without its content.
func (x *Door) Handle(ctx context.Context, frame []byte) []byte {
	c, err := wire.ParseCall(frame)
	if err != nil {
		a := wire.RefuseBody(frame, err)
		if a.CallID == wire.UnreadableCallID {
			x.log.Warn("call frame dropped: no readable callId", "rule", string(a.Refused))
			return nil
		}
		return wire.AnswerFrame(a)
	}
	_, out := x.answer(ctx, c, nil)
	return out
}

// Frame answers an already-validated call and returns the answer frame.
func (x *Door) Frame(ctx context.Context, c wire.Call) []byte {
	return x.AppendFrame(ctx, nil, c)
}

// AppendFrame is Frame appending the answer frame to dst (a Buffer).
func (x *Door) AppendFrame(ctx context.Context, dst []byte, c wire.Call) []byte {
	_, out := x.answer(ctx, c, dst)
	return out
}
