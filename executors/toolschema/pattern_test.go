package toolschema

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// realistic are patterns tool schemas use; the IPv6 one is the largest
// we know (967 instructions).
var realistic = []string{
	`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`,
	`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`,
	`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`,
	`^[a-zA-Z0-9.!#$%&'*+/=?^_` + "`" + `{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`,
	`^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$`,
	`^(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:((:[0-9a-fA-F]{1,4}){1,6})|:((:[0-9a-fA-F]{1,4}){1,7}|:)|fe80:(:[0-9a-fA-F]{0,4}){0,4}%[0-9a-zA-Z]{1,}|::(ffff(:0{1,4}){0,1}:){0,1}((25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9])\.){3,3}(25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9])|([0-9a-fA-F]{1,4}:){1,4}:((25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9])\.){3,3}(25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9]))$`,
	`^[\p{L}\p{N}_-]{1,64}$`,
	`^[a-z0-9]+(?:-[a-z0-9]+)*$`,
}

func patternSchema(p string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"s": map[string]any{"type": "string", "pattern": p}}})
	return b
}

func keySchema(p string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "object", "patternProperties": map[string]any{p: map[string]any{}}})
	return b
}

func wantSchemaReason(t *testing.T, err error, reason string) {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) || se.Reason != reason {
		t.Errorf("got %v, want reason %s", err, reason)
	}
}

// TestPatternProgramBound: a pattern or patternProperties key compiling
// to more than MaxPatternInsts instructions is schema-too-complex; one of
// exactly the bound, every realistic pattern and every bundled plugin's
// schema are admitted.
func TestPatternProgramBound(t *testing.T) {
	for _, p := range []string{`[a-z]{1000}b`, `(a{500}|b{500})c`, `[a-z]{999}bc`} {
		wantSchemaReason(t, Check(patternSchema(p)), ReasonTooComplex)
		wantSchemaReason(t, Check(keySchema(p)), ReasonTooComplex)
	}
	// [a-z]{997}b compiles to exactly 1,000 instructions.
	if n, _ := programSize(`[a-z]{997}b`); n != MaxPatternInsts {
		t.Fatalf("[a-z]{997}b is %d instructions", n)
	}
	for _, p := range append([]string{`[a-z]{997}b`}, realistic...) {
		if err := Check(patternSchema(p)); err != nil {
			t.Errorf("pattern %.40s: %v", p, err)
		}
		if err := Check(keySchema(p)); err != nil {
			t.Errorf("key %.40s: %v", p, err)
		}
	}
	wantSchemaReason(t, Check(patternSchema(`(`)), ReasonInvalid)
	manifests, _ := filepath.Glob("../../plugins/bundled/*/plugin.json")
	if len(manifests) == 0 {
		t.Fatal("no bundled plugin manifests found")
	}
	for _, m := range manifests {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var man struct {
			Tools []struct{ InputSchema json.RawMessage }
		}
		if err := json.Unmarshal(data, &man); err != nil {
			t.Fatal(err)
		}
		for _, tool := range man.Tools {
			if err := Check(tool.InputSchema); err != nil {
				t.Errorf("%s: %v", m, err)
			}
		}
	}
}

// endsAfter is a context whose Err is nil for its first n calls and
// Canceled after: it ends at a point the test controls, not at a time.
type endsAfter struct {
	context.Context
	n int
}

func (c *endsAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func compilePattern(t *testing.T, expr string) *pattern {
	t.Helper()
	re, err := (&matchState{}).compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return re.(*pattern)
}

// TestMatchStopsSoonAfterContextEnds: the work a match does once the
// call's context has ended is bounded by one check interval, whatever
// the string's length: a 1 MiB string against a pattern at the program
// bound stops after reading at most `every` runes past the point the
// context ended.
func TestMatchStopsSoonAfterContextEnds(t *testing.T) {
	p := compilePattern(t, `[a-z]{997}b`)
	s := strings.Repeat("a", 1<<20)
	for _, checks := range []int{0, 1, 5} {
		ctx := &endsAfter{Context: context.Background(), n: checks + 1} // match's own look first
		if ok, stop := p.match(ctx, s); ok || !stop {
			t.Errorf("after %d checks: ok %v stop %v, want a stop", checks, ok, stop)
		}
		r := &stopReader{s: s, ctx: &endsAfter{Context: context.Background(), n: checks}, every: max(1, stepsPerCheck/p.insts)}
		p.re.MatchReader(r)
		if !r.stopped || r.read > checks*r.every {
			t.Errorf("after %d checks: read %d runes (every %d), stopped %v", checks, r.read, r.every, r.stopped)
		}
	}
}

// TestMatchReadsLikeMatchString: matching through the stopReader under a
// live context gives regexp's own answer, anchored or not.
func TestMatchReadsLikeMatchString(t *testing.T) {
	long := strings.Repeat("a", 1<<18)
	for _, c := range []struct{ expr, s string }{
		{`^a+b$`, long + "b"}, {`^a+b$`, long}, {`^a+b$`, "b" + long},
		{`ab`, long + "b"}, {`ab`, long}, {`é+$`, strings.Repeat("é", 1<<17)},
		{`^[a-z]{996}b`, long[:4096]}, {`[a-z]{997}b`, long[:4096] + "b"},
	} {
		p := compilePattern(t, c.expr)
		got, stop := p.match(context.Background(), c.s)
		if want := p.re.MatchString(c.s); got != want || stop {
			t.Errorf("%s on %d bytes: %v (stop %v), want %v", c.expr, len(c.s), got, stop, want)
		}
	}
}

// TestValidateStopsAndCopiesStayApart: Validate under an ended context is
// ErrStopped carrying the cause, while validations on the same Schema
// under live contexts, at the same time, answer as usual; a copy stopped
// mid-match serves the next call correctly.
func TestValidateStopsAndCopiesStayApart(t *testing.T) {
	s, err := Compile(patternSchema(`[a-z]{997}b`), 2)
	if err != nil {
		t.Fatal(err)
	}
	value := func(str string) any { return map[string]any{"s": str} }
	hostile := value(strings.Repeat("a", 1<<20))
	good := value(strings.Repeat("a", 997) + "b")
	ended, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the caller went away")
	cancel(cause)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				if err := s.Validate(ended, hostile); !errors.Is(err, ErrStopped) || !errors.Is(err, cause) {
					t.Errorf("ended context: %v", err)
				}
				return
			}
			if err := s.Validate(context.Background(), good); err != nil {
				t.Errorf("live context, matching value: %v", err)
			}
			var ve *jsonschema.ValidationError
			if err := s.Validate(context.Background(), value("b")); !errors.As(err, &ve) {
				t.Errorf("live context, failing value: %v", err)
			}
		}()
	}
	wg.Wait()
	mid := &endsAfter{Context: context.Background(), n: 3}
	if err := s.Validate(mid, hostile); !errors.Is(err, ErrStopped) {
		t.Errorf("context ended mid-match: %v", err)
	}
	for range 3 { // every kept copy, the stopped one among them
		if err := s.Validate(context.Background(), good); err != nil {
			t.Errorf("after a stopped validation: %v", err)
		}
	}
}
