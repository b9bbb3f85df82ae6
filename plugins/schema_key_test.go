package plugins_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/plugins"
)

// TestSchemaKeyAdmission: a plugin.json that names its JSON Schema in
// "$schema" (for an editor's completion) is admitted and serves as if the
// key were absent; "$schema" twice, folded or not, or spelled in another
// case is refused as any other key would be (PROTOCOL sections 1.7, 8.1).
func TestSchemaKeyAdmission(t *testing.T) {
	guest := testkit.Fixture(t, "guest.wasm")
	m := guestManifest("fx")
	m.SHA256 = plugins.HashModule(guest)
	plain, _ := json.Marshal(m)
	with := func(prefix string) []byte { return append([]byte(`{`+prefix), plain[1:]...) }
	cases := map[string]struct {
		data     []byte
		admitted bool
	}{
		"schema key":            {with(`"$schema":"https://airlock.invalid/schemas/plugin.schema.json",`), true},
		"relative schema":       {with(`"$schema":"../node_modules/@airlock/client/schemas/plugin.schema.json",`), true},
		"duplicate schema key":  {with(`"$schema":"a","$schema":"b",`), false},
		"folded schema key":     {with(`"$schema":"a","$SCHEMA":"b",`), false},
		"schema key other case": {with(`"$Schema":"a",`), false},
		"schema key not string": {with(`"$schema":{},`), false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, nil)
			dir := filepath.Join(e.dir, "fx")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "guest.wasm"), guest, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, plugins.ManifestName), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			e.cat.Scan(context.Background())
			s := e.status(t, "fx")
			if s.Admitted != c.admitted {
				t.Fatalf("status %+v, want admitted=%v", s, c.admitted)
			}
			if !c.admitted && s.Reason != plugins.ReasonDescriptorInvalid {
				t.Fatalf("refused for %s, want %s", s.Reason, plugins.ReasonDescriptorInvalid)
			}
			if c.admitted {
				d, ok := e.table.Get("fx")
				if !ok || d.Descriptor().Bounds.TimeoutMs != m.Bounds.TimeoutMs {
					t.Fatalf("admitted descriptor %+v, %v", d, ok)
				}
			}
		})
	}
}
