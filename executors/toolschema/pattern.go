package toolschema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxPatternInsts bounds a pattern (and a patternProperties key): the
// number of instructions of its compiled RE2 program. RE2 matches in time
// linear in the input times the program, so this bounds the work per
// byte of a string matched against it. The full IPv6 address pattern,
// the largest realistic one we know, compiles to 967; `[a-z]{1000}b`
// (one instruction per repetition) to 1,003. See RATIONALE.md, "Why bound
// a pattern's program, and check the call's context while matching?".
const MaxPatternInsts = 1000

// stepsPerCheck is about how much matching work (program instructions
// times runes read) is done between two looks at the call's context.
const stepsPerCheck = 1 << 18

var errPatternTooLarge = errors.New("pattern over the program bound")

// matchState is what a compiled copy's patterns share: the context of the
// validation running on the copy (nil between validations), and, while
// the copy compiles, the first pattern refused as too large.
type matchState struct {
	ctx       context.Context
	compiling bool
	tooLarge  error
}

// compile is the copy's jsonschema.RegexpEngine: it measures expr's
// program as regexp would compile it (Perl syntax, simplified) before
// compiling it. The library also calls it to check `format: regex`
// values; a refusal is remembered only while the copy compiles, where
// the library may report it as a metaschema failure rather than as
// itself.
func (st *matchState) compile(expr string) (jsonschema.Regexp, error) {
	n, err := programSize(expr)
	if err != nil {
		return nil, err
	}
	if n > MaxPatternInsts {
		err := fmt.Errorf("%w: a pattern compiles to %d RE2 instructions, over %d", errPatternTooLarge, n, MaxPatternInsts)
		if st.compiling && st.tooLarge == nil {
			st.tooLarge = err
		}
		return nil, err
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	return &pattern{re: re, insts: n, st: st}, nil
}

// programSize is the number of instructions regexp.Compile gives expr.
func programSize(expr string) (int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}

// stopSignal unwinds a validation whose context ended from inside a
// match; Schema.Validate recovers it and nothing else.
type stopSignal struct{}

// pattern is a compiled pattern of one copy.
type pattern struct {
	re    *regexp.Regexp
	insts int
	st    *matchState
}

func (p *pattern) String() string { return p.re.String() }

// MatchString matches s under the copy's current validation, and unwinds
// that validation if its context ends first.
func (p *pattern) MatchString(s string) bool {
	ok, stop := p.match(p.st.ctx, s)
	if stop {
		panic(stopSignal{})
	}
	return ok
}

// match reports whether s matches, or stop when ctx ended first. A match
// small enough to cost under stepsPerCheck runs as is; a larger one reads
// s through a stopReader, which looks at ctx every stepsPerCheck/insts
// runes and ends the input when ctx is done. ctx is nil outside a
// validation (the library's own checks while compiling).
func (p *pattern) match(ctx context.Context, s string) (ok, stop bool) {
	if ctx == nil {
		return p.re.MatchString(s), false
	}
	if ctx.Err() != nil {
		return false, true
	}
	if p.insts*len(s) <= stepsPerCheck {
		return p.re.MatchString(s), false
	}
	r := &stopReader{s: s, ctx: ctx, every: max(1, stepsPerCheck/p.insts)}
	ok = p.re.MatchReader(r)
	return ok, r.stopped
}

// stopReader reads s rune by rune and reads as ended once ctx is done,
// which it checks every `every` runes.
type stopReader struct {
	s       string
	ctx     context.Context
	every   int
	read    int // runes read
	stopped bool
}

func (r *stopReader) ReadRune() (rune, int, error) {
	if r.read%r.every == 0 && !r.stopped && r.ctx.Err() != nil {
		r.stopped = true
	}
	if r.stopped || len(r.s) == 0 {
		return 0, 0, io.EOF
	}
	c, n := utf8.DecodeRuneInString(r.s)
	r.s = r.s[n:]
	r.read++
	return c, n, nil
}
