package executors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/executors/internal/argsvalue"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// Call runs one call and answers it, never with a malformed answer.
// Checks run in the contract's order: admitted descriptor
// (unattributed-call), boundsEcho (bounds-mismatch), declared tool
// (unknown-tool), args against the inputSchema (args-invalid), the
// concurrency bound (overloaded), then the run under every other bound.
// The time bound starts before the args are validated: validation, and
// the wait for a module still compiling (see Prepare), that outlast
// timeoutMs, or outlive their caller, are stopped (see
// toolschema.Schema.Validate) and answered like a run would be. A module
// that compilation refuses was never admitted: its waiting calls are
// refused unattributed-call.
//
// Every answer carries budget {requestsUsed, requestsLimit: maxRequests};
// requestsUsed counts the fetches this call started (see fetch.go).
//
// Call does not recover panics: a bug here is caught once, by whoever
// runs the call for its caller (wire.Contain, in the router and the
// channel door), and the deferred releases below run while it unwinds.
func (p *Program) Call(ctx context.Context, c wire.Call) wire.Answer {
	limit := p.d.Bounds.MaxRequests
	if !wire.ValidID(c.CallID) {
		return wire.Refuse(wire.UnreadableCallID, wire.Malformed, &wire.Budget{RequestsLimit: limit})
	}
	refuse := func(r wire.Rule) wire.Answer {
		return wire.Refuse(c.CallID, r, &wire.Budget{RequestsLimit: limit})
	}
	if r := p.enter(); r != "" {
		return refuse(r)
	}
	defer p.leave()
	if p.testHook != nil {
		p.testHook("check")
	}
	if c.DescriptorID != p.d.DescriptorID {
		return refuse(wire.UnattributedCall)
	}
	if !p.echo.Matches(c.BoundsEcho) {
		return refuse(wire.BoundsMismatch)
	}
	schema, ok := p.schemas[c.Tool]
	if !ok {
		a := refuse(wire.UnknownTool)
		a.Why = wire.UnknownToolWhy(c.Tool, p.d.DescriptorID)
		return a
	}
	ctx, stop := p.timeBound(ctx)
	defer stop()
	stopped := func(err error) wire.Answer {
		rule := stoppedRule(ctx)
		p.log.Warn("call refused", "tool", c.Tool, "callId", c.CallID, "refused", string(rule), "err", err)
		a := refuse(rule)
		if rule == wire.ExecTimeout {
			a.Why = wire.TimeoutWhy(p.d.Bounds.TimeoutMs)
		}
		return a
	}
	args, why, err := validArgs(ctx, schema, c.Args)
	if err != nil {
		return stopped(err)
	}
	if why != "" {
		a := refuse(wire.ArgsInvalid)
		a.Why = why
		return a
	}
	if err := p.await(ctx); err != nil {
		if ctx.Err() != nil {
			a := stopped(err)
			if a.Refused == wire.ExecTimeout {
				a.Why = wire.CompilingWhy(p.d.Bounds.TimeoutMs)
			}
			return a
		}
		return refuse(p.unready())
	}
	select {
	case p.sem <- struct{}{}:
		defer func() { <-p.sem }()
	default:
		a := refuse(wire.Overloaded)
		a.Why = fmt.Sprintf("the descriptor already runs exec.max_concurrent %d calls", p.rt.cfg.MaxConcurrent)
		return a
	}
	return p.run(ctx, c.CallID, c.Tool, args)
}

// validArgs holds args to the envelope's own rules (one object, unique
// keys, valid UTF-8) and then to the tool's schema under ctx, and
// returns them compacted: exactly the bytes the guest will read. When
// they fail, it returns the refusal's why instead: the rule's static text
// for args that are not one such object, else what toolschema.Schema.Why names. err is
// set when validation did not finish: ctx ended first.
func validArgs(ctx context.Context, s *toolschema.Schema, raw json.RawMessage) ([]byte, string, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	args, err := wire.CompactMember(raw)
	if err != nil {
		return nil, wire.ArgsInvalid.Why(), nil
	}
	v, err := argsvalue.Decode(args)
	if err != nil {
		return nil, wire.ArgsInvalid.Why(), nil
	}
	var ve *jsonschema.ValidationError
	switch err := s.Validate(ctx, v); {
	case err == nil:
		return args, "", nil
	case errors.As(err, &ve):
		return nil, s.Why(err, wire.ArgsInvalid.Why()), nil
	default:
		return nil, "", err
	}
}

// timeBound is the call's time bound: timeoutMs from the start of args
// validation to the end of the run. Its cause, errDeadline, tells it
// from the caller cancelling.
func (p *Program) timeBound(parent context.Context) (context.Context, context.CancelFunc) {
	timeout := time.Duration(p.d.Bounds.TimeoutMs) * time.Millisecond
	return context.WithTimeoutCause(parent, timeout, errDeadline)
}

// stoppedRule answers a call whose validation did not finish as verdict
// answers a run: exec-timeout when the time bound passed, exec-threw
// otherwise (the caller cancelled).
func stoppedRule(ctx context.Context) wire.Rule {
	if errors.Is(context.Cause(ctx), errDeadline) {
		return wire.ExecTimeout
	}
	return wire.ExecThrew
}

// run executes one admitted call. A panic of a host function is returned
// by wazero as the guest call's error, so it is answered exec-threw like a
// trap.
func (p *Program) run(parent context.Context, callID, tool string, args []byte) wire.Answer {
	s := p.newCallState(parent, callID, tool)
	defer s.cancel(nil)
	p.begin(s)
	defer p.end(s)
	if p.testHook != nil {
		p.testHook("run")
	}
	var out []byte
	var err error
	if p.style == styleReactor {
		out, err = p.runReactor(s, args)
	} else {
		out, err = p.runCommand(s, args)
	}
	return s.finish(out, err)
}

// callState is one call's view for the host functions, which find it in
// the context wazero hands them. Host functions run on the call's own
// goroutine, so it needs no lock.
type callState struct {
	p            *Program
	ctx          context.Context
	cancel       context.CancelCauseFunc
	callID, tool string
	used         int       // fetches started, see fetch.go
	rule         wire.Rule // set by a host function that ended the call
	outputOver   bool      // reading stopped at the output bound
	outputBytes  int       // the compact output's size, when over the bound
	alloc        *limitedAllocator
	stderr       boundedBuffer
	logLines     int
	pending      []byte            // fetch response awaiting fetch_read
	values       *plugincfg.Values // the operator's values, taken at the first config_get
	undeclared   int               // config_get asks for undeclared names
}

type stateKey struct{}

func (p *Program) newCallState(parent context.Context, callID, tool string) *callState {
	s := &callState{p: p, callID: callID, tool: tool, stderr: boundedBuffer{limit: p.rt.cfg.MaxStderrBytes}}
	ctx, cancel := context.WithCancelCause(parent)
	s.ctx = context.WithValue(ctx, stateKey{}, s)
	s.cancel = cancel
	return s
}

func stateFrom(ctx context.Context) *callState {
	s, _ := ctx.Value(stateKey{}).(*callState)
	return s
}

// stop records rule as the call's outcome (the first one wins) and
// unwinds the guest from inside a host function.
func (s *callState) stop(rule wire.Rule) {
	if s.rule == "" {
		s.rule = rule
	}
	panic(&refusal{rule: rule})
}

// finish turns the run's outcome into the answer and logs a failure.
func (s *callState) finish(out []byte, err error) wire.Answer {
	obs, rule, err := s.verdict(out, err)
	b := &wire.Budget{RequestsUsed: s.used, RequestsLimit: s.p.d.Bounds.MaxRequests}
	if rule == "" {
		// The check comes first so a chatty tool's successful calls
		// build no logger and no attributes unless debug is on.
		if s.stderr.Len() > 0 && s.p.log.Enabled(s.ctx, slog.LevelDebug) {
			s.logger().Debug("tool stderr", "stderr", s.stderr.String())
		}
		return wire.Observed(s.callID, obs, b)
	}
	a := wire.Refuse(s.callID, rule, b)
	a.Why = s.why(rule)
	if rule == wire.Cancelled {
		s.logger().Info("call cancelled", "err", err)
		return a
	}
	s.logger().Warn("call refused", "refused", string(rule), "err", err, "stderr", s.stderr.String())
	if te := (*toolError)(nil); rule == wire.ExecThrew && errors.As(err, &te) && te.why != "" {
		a.Why = te.why
	}
	return a
}

// verdict decides the outcome. A refusal recorded by a host function is
// the cause of whatever failure followed, then our own cancellation for
// output, then success; a failed run is blamed on the memory bound if a
// grow was refused, on the time bound if our deadline fired, on the
// broker draining if a late Runtime.Close cancelled it, on the caller if
// its context ended the run (wire.Cancelled, not a rule: nobody reads
// that answer), and on the tool otherwise, where a tool error (a
// *toolError in err) gives the answer its why.
func (s *callState) verdict(out []byte, err error) (json.RawMessage, wire.Rule, error) {
	switch {
	case s.rule != "":
		return nil, s.rule, err
	case s.outputOver:
		return nil, wire.OutputTooLarge, errOutputOver
	case err == nil:
		obs, cerr := wire.CompactMember(out)
		if cerr != nil {
			return nil, wire.ExecThrew, errBadResult
		}
		if !s.p.d.Bounds.OutputFits(obs) {
			s.outputBytes = len(obs)
			return nil, wire.OutputTooLarge, errOutputOver
		}
		return obs, "", nil
	case s.alloc != nil && s.alloc.exhausted():
		return nil, wire.MemoryExhausted, err
	case errors.Is(context.Cause(s.ctx), errDeadline):
		return nil, wire.ExecTimeout, err
	case errors.Is(context.Cause(s.ctx), errShuttingDown):
		return nil, wire.ShuttingDown, err
	case s.ctx.Err() != nil:
		// None of our causes: the caller's context ended the run.
		return nil, wire.Cancelled, err
	}
	return nil, wire.ExecThrew, err
}

// why is the refusal's why: for a rule a bound decides, the bound with its
// value and what the call reached (wire.OutputWhy and its kin), else the
// rule's static text.
func (s *callState) why(rule wire.Rule) string {
	b := s.p.d.Bounds
	switch rule {
	case wire.ExecTimeout:
		return wire.TimeoutWhy(b.TimeoutMs)
	case wire.MemoryExhausted:
		return wire.MemoryWhy(s.alloc.asked(), b.MemoryMiB)
	case wire.OutputTooLarge:
		return wire.OutputWhy(s.outputBytes, b.MaxOutputBytes)
	case wire.BudgetExhausted:
		return wire.BudgetWhy(b.MaxRequests)
	}
	return rule.Why()
}

func (s *callState) logger() *slog.Logger {
	return s.p.log.With("tool", s.tool, "callId", s.callID)
}

// sleep is the guest's nanosleep (poll_oneoff with a clock), cut short
// when the call's context ends so a sleeping guest cannot outlive its
// deadline.
func (s *callState) sleep(ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	}
}

// boundedBuffer keeps the first limit bytes written and drops the rest
// without failing the writer: stderr is for the operator, and a chatty
// guest must neither fill the broker's memory nor die of a full pipe.
type boundedBuffer struct {
	limit     int
	buf       bytes.Buffer
	truncated bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := b.limit - b.buf.Len()
	if room < len(p) {
		b.truncated = true
		p = p[:max(room, 0)]
	}
	b.buf.Write(p)
	return n, nil
}

func (b *boundedBuffer) Len() int { return b.buf.Len() }

func (b *boundedBuffer) String() string {
	if b.truncated {
		return b.buf.String() + "…(truncated)"
	}
	return b.buf.String()
}
