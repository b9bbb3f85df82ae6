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
// object may have. It is nil when location is not in the admitted
// document or declares no properties. These are the schema's names, not
// the caller's.
func (s *Schema) Properties(location string) []string {
	base, frag, ok := strings.Cut(location, "#")
	if !ok || base != documentURL {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.raw))
	if err != nil {
		return nil
	}
	_, v, err := (&schemaWalk{root: doc}).resolve("#" + frag)
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(props))
}
