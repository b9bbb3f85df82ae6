package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGeneratedFilesAreCurrent regenerates src/fold.ts and src/rules.ts
// and fails on any difference from the committed files: a Go release with
// new Unicode tables, or a rule added to executors/wire, must be carried
// into the JavaScript client (go generate ./broker/jsclient).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for name, want := range files() {
		got, err := os.ReadFile(filepath.Join("..", "..", "src", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("src/%s is stale: run go generate ./broker/jsclient", name)
		}
	}
}

// TestRunsCoverTheFold decodes the runs back and checks them against
// wire.Fold on every code point, so the encoding loses nothing.
func TestRunsCoverTheFold(t *testing.T) {
	table := map[rune]rune{}
	rs := runs()
	for i := 0; i < len(rs); i += 4 {
		for k := range rs[i+1] {
			cp := rs[i] + k*rs[i+2]
			table[rune(cp)] = rune(cp - rs[i+3])
		}
	}
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if 0xD800 <= r && r <= 0xDFFF {
			continue
		}
		want := fold(r)
		got, ok := table[r]
		if !ok {
			got = r
		}
		if got != want {
			t.Fatalf("U+%04X folds to U+%04X in the runs, U+%04X in Go", r, got, want)
		}
	}
	// The examples of PROTOCOL section 1.7 and executors/wire's Fold.
	for in, want := range map[string]string{"k": "K", "\u212a": "K", "\u017f": "S", "ς": "Σ", "ẞ": "ß", "ss": "SS", "ı": "ı"} {
		if got := string(wire.Fold([]byte(in))); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}
