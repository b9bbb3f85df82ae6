package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestGoldenHello(t *testing.T) {
	for name, c := range golden(t, "channel/hello") {
		t.Run(name, func(t *testing.T) {
			h, err := ParseHello([]byte(c[0]))
			if got := outcome(err); got != c[1] {
				t.Fatalf("got %s, want %s", got, c[1])
			}
			if err == nil && (h.Type != TypeHello || h.Role != RoleEnvironment || !strings.HasPrefix(h.Bearer, "vbx_")) {
				t.Errorf("hello %+v", h)
			}
			if err != nil && strings.Contains(err.Error(), "vbx_") {
				t.Errorf("the error quotes the bearer: %v", err)
			}
		})
	}
}

func TestGoldenCatalog(t *testing.T) {
	for name, c := range golden(t, "channel/catalog") {
		t.Run(name, func(t *testing.T) {
			ds, err := ParseCatalog([]byte(c[0]))
			if got := outcome(err); got != c[1] {
				t.Fatalf("got %s, want %s", got, c[1])
			}
			if err != nil {
				return
			}
			// A parsed catalog re-encodes to a frame that parses the same.
			again, err := ParseCatalog(CatalogFrame(ds))
			if err != nil || fmt.Sprint(again) != fmt.Sprint(ds) {
				t.Errorf("round trip: %v", err)
			}
			for _, d := range ds {
				if d.Executor != "" {
					t.Errorf("catalog descriptor has executor %q", d.Executor)
				}
			}
		})
	}
}

func TestHelloBounds(t *testing.T) {
	big := `{"type":"hello","role":"environment","bearer":"vbx_` + strings.Repeat("a", MaxHelloBytes) + `"}`
	if _, err := ParseHello([]byte(big)); outcome(err) != "malformed" {
		t.Errorf("oversized hello: %v", err)
	}
	long := string(HelloFrame("vbx_" + strings.Repeat("a", MaxBearerLen)))
	if _, err := ParseHello([]byte(long)); outcome(err) != "malformed" {
		t.Errorf("overlong bearer: %v", err)
	}
	h, err := ParseHello(HelloFrame("vbx_abc"))
	if err != nil || h.Bearer != "vbx_abc" {
		t.Errorf("HelloFrame does not parse: %v", err)
	}
}

func TestCatalogBound(t *testing.T) {
	ds := make([]Descriptor, MaxCatalogDescriptors+1)
	for i := range ds {
		ds[i] = Descriptor{DescriptorID: fmt.Sprintf("d%d", i), Tools: []Tool{{Name: "t", InputSchema: json.RawMessage(`{}`)}},
			Bounds: Bounds{TimeoutMs: 1, MemoryMiB: 1, MaxOutputBytes: 1}}
	}
	if _, err := ParseCatalog(CatalogFrame(ds)); outcome(err) != "malformed" {
		t.Errorf("catalog over its bound: %v", err)
	}
	if _, err := ParseCatalog(CatalogFrame(ds[:MaxCatalogDescriptors])); err != nil {
		t.Errorf("catalog at its bound: %v", err)
	}
}

func TestIsControl(t *testing.T) {
	cases := map[string]bool{
		`{"type":"catalog","descriptors":[]}`:                  true,
		`{"type":1}`:                                           true,
		`{"v":1,"callId":"c","ok":true,"observed":{}}`:         false,
		`{"v":1,"callId":"c","ok":true,"observed":{"type":1}}`: false,
		`not json`:                false,
		`["type"]`:                false,
		`{"type":"x","type":"y"}`: false, // duplicate keys are not an object we read
	}
	for in, want := range cases {
		if got := IsControl([]byte(in)); got != want {
			t.Errorf("IsControl(%s) = %v", in, got)
		}
	}
}

func FuzzParseHello(f *testing.F) {
	for _, c := range golden(f, "channel/hello") {
		f.Add([]byte(c[0]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHello(data)
		if err != nil {
			if RuleOf(err) != Malformed && RuleOf(err) != UnknownField {
				t.Fatalf("rule %s", RuleOf(err))
			}
			return
		}
		checkAccepted(t, data, h.Bearer)
		if _, err := ParseHello(HelloFrame(h.Bearer)); err != nil {
			t.Fatalf("an accepted hello does not round-trip: %v", err)
		}
	})
}

func FuzzParseCatalog(f *testing.F) {
	for _, c := range golden(f, "channel/catalog") {
		f.Add([]byte(c[0]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ParseCatalog(data)
		if err != nil {
			return
		}
		ids := []string{}
		for _, d := range ds {
			ids = append(ids, d.DescriptorID)
			for _, tool := range d.Tools {
				ids = append(ids, tool.Name)
			}
		}
		checkAccepted(t, data, ids...)
		if _, err := ParseCatalog(CatalogFrame(ds)); err != nil {
			t.Fatalf("an accepted catalog does not round-trip: %v", err)
		}
	})
}
