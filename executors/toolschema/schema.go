// Package toolschema admits a tool's inputSchema and outputSchema and
// validates call arguments and observations against them. Plugins
// (executors) and peers' catalogs (the channel) are held to the same
// admission bounds through Check and Compile; the package pulls in no
// WASM runtime, so the broker's channel and router can use it.
package toolschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock/airlock/executors/internal/argsvalue"
)

// Reasons a schema is not admitted: the admission reasons of PROTOCOL
// section 8.3 and the catalog drop reasons of section 6.4.
const (
	ReasonInvalid    = "schema-invalid"
	ReasonTooComplex = "schema-too-complex"
)

// Error is why a schema is not admitted. Reason is ReasonInvalid or
// ReasonTooComplex; Err carries the detail for the operator.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// ErrStopped is returned by Validate when the call's context ended first;
// errors.Is also finds the context's cause in it.
var ErrStopped = errors.New("toolschema: validation stopped: the call ended")

// Schema is an admitted inputSchema or outputSchema, safe for concurrent
// use. Validating needs a compiled copy of its own (its patterns read the
// context of the validation running on it), so copies are kept for
// reuse: at most idle of them wait between calls, and a call that finds
// none compiles one.
type Schema struct {
	raw  []byte
	free chan *instance
}

// instance is one compiled copy with the state its patterns read.
type instance struct {
	s     *jsonschema.Schema
	state *matchState
}

// Check admits raw as Compile does and keeps nothing: peers' catalogs are
// held to the plugins' bounds but validated by the peer.
func Check(raw json.RawMessage) error {
	_, err := Compile(raw, 0)
	return err
}

// Compile admits raw, or says why not with an *Error: its expanded size
// is bounded first (MaxSchemaNodes, no recursive or outside $ref), then
// it is compiled with no loader (a $ref never reads a file or the
// network) and every pattern bounded (MaxPatternInsts). idle is how many
// compiled copies are kept between calls.
func Compile(raw json.RawMessage, idle int) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &Error{ReasonInvalid, err}
	}
	if err := checkSchemaCost(doc, MaxSchemaNodes); err != nil {
		reason := ReasonInvalid
		if errors.Is(err, errSchemaTooComplex) {
			reason = ReasonTooComplex
		}
		return nil, &Error{reason, err}
	}
	s := &Schema{raw: bytes.Clone(raw), free: make(chan *instance, max(idle, 1))}
	in, err := compileDoc(doc)
	if err != nil {
		return nil, err
	}
	s.free <- in
	return s, nil
}

// compileDoc compiles one copy of doc. Its location is a fixed https URL
// under .invalid with an empty loader, so only refs inside the document
// (or to a bundled metaschema) resolve.
func compileDoc(doc any) (*instance, error) {
	st := &matchState{compiling: true}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{})
	c.UseRegexpEngine(st.compile)
	const loc = documentURL
	if err := c.AddResource(loc, doc); err != nil {
		return nil, &Error{ReasonInvalid, err}
	}
	s, err := c.Compile(loc)
	if st.tooLarge != nil {
		return nil, &Error{ReasonTooComplex, st.tooLarge}
	}
	if err != nil {
		return nil, &Error{ReasonInvalid, err}
	}
	st.compiling = false
	return &instance{s: s, state: st}, nil
}

// get takes an idle copy, or compiles one from the admitted bytes.
func (s *Schema) get() (*instance, error) {
	select {
	case in := <-s.free:
		return in, nil
	default:
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.raw))
	if err != nil {
		return nil, err
	}
	return compileDoc(doc)
}

// put keeps in for a later call, or drops it when enough copies wait.
func (s *Schema) put(in *instance) {
	select {
	case s.free <- in:
	default:
	}
}

// Validate validates v (a value as jsonschema.UnmarshalJSON reads it)
// under ctx: it returns nil, a *jsonschema.ValidationError, or ErrStopped
// when ctx ended first. A pattern match checks ctx as it reads (see
// pattern.match), so validation stops soon after the caller goes away or
// the call's time bound passes, however long its strings; the rest of
// validation is bounded by MaxSchemaNodes and checked once it returns.
func (s *Schema) Validate(ctx context.Context, v any) (err error) {
	if ctx.Err() != nil {
		return stopped(ctx)
	}
	in, err := s.get()
	if err != nil {
		return err
	}
	in.state.ctx = ctx
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopSignal); !ok {
				panic(r)
			}
			err = stopped(ctx)
		}
		in.state.ctx = nil
		s.put(in)
	}()
	err = in.s.Validate(v)
	if ctx.Err() != nil {
		return stopped(ctx)
	}
	return err
}

func stopped(ctx context.Context) error {
	return fmt.Errorf("%w (%w)", ErrStopped, context.Cause(ctx))
}

// ValidateJSON is Validate for an instance given as JSON: an observation
// as an executor answered it (compact, one object).
func (s *Schema) ValidateJSON(ctx context.Context, data []byte) error {
	v, err := argsvalue.Decode(data)
	if err != nil {
		return err
	}
	return s.Validate(ctx, v)
}
