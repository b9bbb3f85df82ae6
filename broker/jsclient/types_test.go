package jsclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedTypesCurrent regenerates the TypeScript types from the
// schemas (scripts/gen-types.mjs, the pinned json-schema-to-typescript)
// into a temporary folder and fails on any difference from the committed
// src/generated, so the types cannot drift from the contract. It needs
// node and `npm ci` in broker/jsclient; without them it skips, unless
// AIRLOCK_REQUIRE_NODE is set.
func TestGeneratedTypesCurrent(t *testing.T) {
	node, err := exec.LookPath("node")
	_, depErr := os.Stat(filepath.Join("node_modules", "json-schema-to-typescript", "package.json"))
	if err != nil || depErr != nil {
		if os.Getenv("AIRLOCK_REQUIRE_NODE") != "" {
			t.Fatalf("node or json-schema-to-typescript is missing (npm ci in broker/jsclient): %v %v", err, depErr)
		}
		t.Skip("node or json-schema-to-typescript is missing (npm ci in broker/jsclient)")
	}
	out := t.TempDir()
	cmd := exec.Command(node, filepath.Join("scripts", "gen-types.mjs"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-types: %v\n%s", err, b)
	}
	want, _ := filepath.Glob(filepath.Join(out, "*.ts"))
	got, _ := filepath.Glob(filepath.Join("src", "generated", "*"))
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("src/generated holds %d files, the schemas make %d: run npm run gen:types", len(got), len(want))
	}
	for _, w := range want {
		fresh, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("src", "generated", filepath.Base(w)))
		if err != nil || !bytes.Equal(fresh, committed) {
			t.Errorf("src/generated/%s differs from what the schemas make (%v): run npm run gen:types", filepath.Base(w), err)
		}
	}
}
