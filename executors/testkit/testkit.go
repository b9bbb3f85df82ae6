// Package testkit holds the helpers that tests across the repository
// share: a Buffer a goroutine writes while the test reads it, Eventually
// to wait for what a background goroutine makes true, and Fixture to
// read the WASM fixtures under testdata/fixtures.
//
// It imports only the standard library, so any package's tests can use
// it without an import cycle, and no product package imports it (a test
// checks that the binary does not link it). Why it lives here:
// RATIONALE.md, "Why are the test kits exported packages, the shared one
// under `executors/`?".
package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// fixtures caches each fixture's bytes: guest.wasm is megabytes and
// dozens of tests read it.
var fixtures sync.Map // name -> []byte

// Fixture returns a copy of the repository's testdata/fixtures/name, so
// no test can change what another reads.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	if b, ok := fixtures.Load(name); ok {
		return bytes.Clone(b.([]byte))
	}
	b, err := os.ReadFile(FixturePath(name))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
		return nil
	}
	fixtures.Store(name, b)
	return bytes.Clone(b)
}

// FixturePath is the path of testdata/fixtures/name, found from this
// file's own location so that it is the same from any package's folder.
func FixturePath(name string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "testdata", "fixtures", name)
}
