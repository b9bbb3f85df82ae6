package plugins_test

import (
	"errors"
	"testing"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/executors/wire/wiretest"
	"github.com/airlock/airlock/plugins"
)

// manifestOutcome is "ok", the rule id of a strict-decoding refusal, or
// "invalid" for a field check that failed.
func manifestOutcome(err error) string {
	var e *wire.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &e):
		return string(e.Rule)
	}
	return "invalid"
}

// TestGoldenManifests checks every case of testdata/plugin.
func TestGoldenManifests(t *testing.T) {
	for name, c := range wiretest.Golden(t, "plugin") {
		t.Run(name, func(t *testing.T) {
			_, err := plugins.ParseManifest([]byte(c.In))
			if got := manifestOutcome(err); got != c.Want {
				t.Fatalf("got %s (%v), want %s", got, err, c.Want)
			}
		})
	}
}

// FuzzParseManifest: nothing panics, and no accepted plugin.json holds two
// keys equal under case folding at any depth.
func FuzzParseManifest(f *testing.F) {
	for _, c := range wiretest.Golden(f, "plugin") {
		f.Add([]byte(c.In))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := plugins.ParseManifest(data); err != nil {
			return
		}
		if wiretest.FoldDuplicate(data) {
			t.Fatalf("accepted a case-folded duplicate: %q", data)
		}
	})
}
