package toolschema

import (
	"context"
	"errors"

	"github.com/airlock/airlock/executors/wire"
)

// Hold holds answer a of a tool whose outputSchema is s: an observation
// that satisfies it, a refusal, or any answer when s is nil (the tool
// declares none) is returned as it is; an observation that does not is
// refused output-invalid, keeping a's budget, its why naming the failing
// value's JSON Pointer and the schema keyword (Why), never a value.
// Validation runs under ctx (the caller's): a caller gone first gets
// wire.Cancelled, which nobody reads. Every door that hands on
// observations calls it: the broker's router for every executor, and an
// offline run (`airlock run`).
func (s *Schema) Hold(ctx context.Context, a wire.Answer) wire.Answer {
	if s == nil || !a.OK {
		return a
	}
	err := s.ValidateJSON(ctx, a.Observed)
	switch {
	case err == nil:
		return a
	case errors.Is(err, ErrStopped):
		return wire.Refuse(a.CallID, wire.Cancelled, a.Budget)
	}
	refused := wire.Refuse(a.CallID, wire.OutputInvalid, a.Budget)
	refused.Why = s.Why(err, wire.OutputInvalid.Why())
	return refused
}
