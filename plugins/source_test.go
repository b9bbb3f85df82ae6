package plugins_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/plugins"
)

// TestSource: the record beside plugin.json reads back as written; none
// is no record; one that does not parse, names nothing or is not plain
// text is an error.
func TestSource(t *testing.T) {
	dir := t.TempDir()
	if s, err := plugins.ReadSource(filecheck.Dir(dir), "."); s != nil || err != nil {
		t.Fatalf("no record: %+v %v", s, err)
	}
	want := plugins.Source{Ref: "127.0.0.1:5000/p/web:1", Digest: "sha256:ab", PulledAt: "2026-01-02T03:04:05Z"}
	if err := plugins.WriteSource(dir, want); err != nil {
		t.Fatal(err)
	}
	if s, err := plugins.ReadSource(filecheck.Dir(dir), "."); err != nil || s == nil || *s != want {
		t.Fatalf("read back: %+v %v", s, err)
	}
	for _, bad := range []string{`{`, `{"ref":"r"}`, `{"ref":"r","digest":"d","extra":1}`, `{"ref":"r x","digest":"d"}`, `{"ref":"r\u001b[2J","digest":"d"}`} {
		if err := os.WriteFile(filepath.Join(dir, plugins.SourceName), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if s, err := plugins.ReadSource(filecheck.Dir(dir), "."); err == nil {
			t.Errorf("%s read as %+v", bad, s)
		}
	}
}
