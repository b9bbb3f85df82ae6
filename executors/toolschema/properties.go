package toolschema

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// documentURL is where every inputSchema is compiled, so the base of the
// locations its validation errors name.
const documentURL = "https://airlock.invalid/input-schema.json"

// Properties lists, sorted, the names that the properties keyword
// declares in the subschema at location (a *jsonschema.ValidationError's
// SchemaURL), so an args-invalid why can tell the caller which keys an
// object may have. ok is false when that is not a complete list: location
// is not in the admitted document, or patternProperties allows more.
// These are the schema's names, not the caller's.
func (s *Schema) Properties(location string) (names []string, ok bool) {
	base, frag, found := strings.Cut(location, "#")
	if !found || base != documentURL {
		return nil, false
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.raw))
	if err != nil {
		return nil, false
	}
	_, v, err := (&schemaWalk{root: doc}).resolve("#" + frag)
	m, isObject := v.(map[string]any)
	if _, patterns := m["patternProperties"]; err != nil || !isObject || patterns {
		return nil, false
	}
	props, _ := m["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(props)), true
}
