package toolschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock/airlock/executors/testkit"
)

func schemaCost(t *testing.T, schema string, limit int) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	return checkSchemaCost(doc, limit)
}

// TestSchemaCostCountsExpandedNodes: every JSON value counts once, and a
// $ref counts its target again where it is used.
func TestSchemaCostCountsExpandedNodes(t *testing.T) {
	// root, $defs, a, "string", "$ref" value, then a and "string" again: 7.
	ref := `{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`
	if err := schemaCost(t, ref, 7); err != nil {
		t.Errorf("7 expanded nodes under a limit of 7: %v", err)
	}
	if err := schemaCost(t, ref, 6); !errors.Is(err, errSchemaTooComplex) {
		t.Errorf("7 expanded nodes under a limit of 6: %v", err)
	}
	if err := schemaCost(t, testkit.EnumSchema(50), 50); err != nil {
		t.Errorf("enum of 50 nodes: %v", err)
	}
	if err := schemaCost(t, testkit.EnumSchema(51), 50); !errors.Is(err, errSchemaTooComplex) {
		t.Errorf("enum of 51 nodes: %v", err)
	}
}

// TestSchemaCostRefusesCyclesAndOutsideRefs: a $ref that leads back into
// itself is too complex (its expansion has no end); a $ref the walker
// cannot follow inside the document is invalid.
func TestSchemaCostRefusesCyclesAndOutsideRefs(t *testing.T) {
	for schema, want := range map[string]error{
		`{"$ref":"#"}`:                         errSchemaTooComplex,
		`{"properties":{"next":{"$ref":"#"}}}`: errSchemaTooComplex,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`: errSchemaTooComplex,
		`{"$defs":{"a":{"items":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`:                errSchemaTooComplex,
		`{"definitions":{"a":{"properties":{"x":{"$ref":"#/definitions/a/properties"}}}}}`: errSchemaTooComplex,
		`{"$ref":"https://example.com/s.json"}`:                                            errSchemaRef,
		`{"$ref":"#/$defs/missing"}`:                                                       errSchemaRef,
		`{"$ref":"#anchor","$defs":{"a":{"$anchor":"anchor"}}}`:                            errSchemaRef,
		`{"$dynamicRef":"#/$defs/a","$defs":{"a":{}}}`:                                     errSchemaRef,
		`{"$defs":{"a":{"$id":"https://x.invalid/a","$defs":{}}}}`:                         errSchemaRef,
	} {
		if err := schemaCost(t, schema, 1000); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", schema, err, want)
		}
	}
	// A property named like a keyword is not one: its value is a schema.
	for _, schema := range []string{
		`{"properties":{"$ref":{"type":"string"},"$id":{"type":"string"}}}`,
		`{"$defs":{"a":{"type":"string"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/b"}`,
		`{"$defs":{"a~b/c":{"type":"string"}},"$ref":"#/$defs/a~0b~1c"}`,
		`{"$defs":{"a b":{"type":"string"}},"$ref":"#/$defs/a%20b"}`,
	} {
		if err := schemaCost(t, schema, 1000); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
}
