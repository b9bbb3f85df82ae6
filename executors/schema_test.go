package executors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/toolschema"
	"github.com/airlock/airlock/executors/wire"
)

// loadSchema loads the guest with echo's inputSchema set to schema.
func loadSchema(t *testing.T, r *Runtime, b wire.Bounds, schema string) (*Program, error) {
	t.Helper()
	d := guestDescriptor("guest", b)
	d.Tools[0].InputSchema = json.RawMessage(schema)
	p, err := r.Load(context.Background(), d, testkit.Fixture(t, "guest.wasm"))
	if err == nil {
		t.Cleanup(func() { _ = p.Close(context.Background()) })
	}
	return p, err
}

// TestSchemaBombRefusedAtAdmission: Load refuses the attack's schema as
// schema-too-complex before compiling it, and a schema of exactly
// MaxSchemaNodes nodes is admitted while one more node is refused.
func TestSchemaBombRefusedAtAdmission(t *testing.T) {
	r := newRuntime(t, Config{})
	for _, n := range []int{20, 40, 200} {
		_, err := loadSchema(t, r, defaultBounds(), testkit.SchemaBomb(n))
		wantReason(t, err, ReasonSchemaTooComplex)
	}
	_, err := loadSchema(t, r, defaultBounds(), testkit.EnumSchema(toolschema.MaxSchemaNodes+1))
	wantReason(t, err, ReasonSchemaTooComplex)
	if _, err := loadSchema(t, r, defaultBounds(), testkit.EnumSchema(toolschema.MaxSchemaNodes)); err != nil {
		t.Fatalf("schema of exactly MaxSchemaNodes: %v", err)
	}
	// Small bombs within the bound stay admitted: the bound is on size.
	if _, err := loadSchema(t, r, defaultBounds(), testkit.SchemaBomb(5)); err != nil {
		t.Fatalf("bomb of 5 levels: %v", err)
	}
}

// hostileSchema has a pattern at the program bound; hostileArgs is 1 MiB
// that it must read to the end, about 10^9 steps of matching.
const hostileSchema = `{"type":"object","properties":{"s":{"type":"string","pattern":"[a-z]{997}b"}}}`

var hostileArgs = `{"s":"` + strings.Repeat("a", 1<<20) + `"}`

// TestLoadRefusesLargePatterns: a pattern one instruction over the bound
// refuses the module schema-too-complex.
func TestLoadRefusesLargePatterns(t *testing.T) {
	r := newRuntime(t, Config{})
	_, err := loadSchema(t, r, defaultBounds(), strings.Replace(hostileSchema, "997", "998", 1))
	wantReason(t, err, ReasonSchemaTooComplex)
}

// TestHostileArgsStopAtTheTimeBound: validation runs under the call's
// time bound, so args that take longer to validate than timeoutMs are
// answered exec-timeout (and the call's slot is never taken).
func TestHostileArgsStopAtTheTimeBound(t *testing.T) {
	r := newRuntime(t, Config{})
	b := defaultBounds()
	b.TimeoutMs = 100
	p, err := loadSchema(t, r, b, hostileSchema)
	if err != nil {
		t.Fatal(err)
	}
	a := call(t, p, "echo", hostileArgs)
	wantRule(t, a, wire.ExecTimeout)
	wantRefusalWhy(t, a, "the tool ran past bounds.timeoutMs 100 ms")
}

// TestHostileArgsStopWhenTheCallerLeaves: a caller already gone is not
// validated for: the hostile args are answered at once (exec-threw, as a
// run whose caller cancelled), not args-invalid after the whole match.
func TestHostileArgsStopWhenTheCallerLeaves(t *testing.T) {
	r := newRuntime(t, Config{})
	p, err := loadSchema(t, r, defaultBounds(), hostileSchema)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := p.Call(ctx, wire.Call{V: 1, CallID: "call_1", Tool: "echo", DescriptorID: p.d.DescriptorID,
		Args: json.RawMessage(hostileArgs), BoundsEcho: p.d.Bounds.Canonical()})
	mustParse(t, a)
	wantRule(t, a, wire.ExecThrew)
}

// TestLoadHoldsOutputSchemasToTheBounds: an outputSchema is admitted
// under the inputSchema's bounds, with the same reasons, the error naming
// the outputSchema and its tool; an admitted one is compiled once, at
// Load, and the module hash given is listed with the descriptor.
func TestLoadHoldsOutputSchemasToTheBounds(t *testing.T) {
	r := newRuntime(t, Config{})
	load := func(output string) (*Program, error) {
		d := guestDescriptor("guest", defaultBounds())
		d.Tools[0].OutputSchema = json.RawMessage(output)
		p, err := r.Load(context.Background(), d, testkit.Fixture(t, "guest.wasm"), WithModuleHash("cafe"))
		if err == nil {
			t.Cleanup(func() { _ = p.Close(context.Background()) })
		}
		return p, err
	}
	_, err := load(strings.Replace(testkit.SchemaBomb(20), `{`, `{"type":"object",`, 1))
	wantReason(t, err, ReasonSchemaTooComplex)
	if !strings.Contains(err.Error(), "the outputSchema of tool echo") {
		t.Errorf("the refusal does not name the outputSchema: %v", err)
	}
	_, err = load(`{"type":"object","$ref":"https://example.com/s.json"}`)
	wantReason(t, err, ReasonSchemaInvalid)
	_, err = load(`{"type":"array"}`)
	wantReason(t, err, ReasonDescriptorInvalid)
	p, err := load(`{"type":"object","required":["n"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Outputs()["echo"] == nil || len(p.Outputs()) != 1 || p.Admitted().SHA256 != "cafe" || p.Descriptor().SHA256 != "cafe" {
		t.Errorf("outputs %v, sha256 %q", p.Outputs(), p.Admitted().SHA256)
	}
}
