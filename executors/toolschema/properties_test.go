package toolschema

import (
	"slices"
	"testing"
)

// TestProperties: the properties declared at a schema location, sorted;
// none is an empty list; a location outside the document, or one where
// patternProperties allows more, gives no list.
func TestProperties(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"b":{},"a":{"type":"object","properties":{}}},
		"$defs":{"p":{"patternProperties":{"^x":{}}}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   string
		want []string
		ok   bool
	}{
		{documentURL + "#", []string{"a", "b"}, true},
		{documentURL + "#/properties/a", nil, true},
		{documentURL + "#/$defs/p", nil, false},
		{documentURL + "#/nowhere", nil, false},
		{"https://elsewhere.invalid/s.json#", nil, false},
	} {
		got, ok := s.Properties(c.at)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.at, got, ok, c.want, c.ok)
		}
	}
}
