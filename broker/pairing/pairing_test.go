package pairing

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var now = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

func TestAddListRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created by Add
	bearer, err := Add(dir, "laptop", now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bearer, BearerPrefix) || len(bearer) != len(BearerPrefix)+43 {
		t.Errorf("bearer %q is not vbx_ + 256 bits of URL-safe base64", bearer)
	}
	info, err := os.Stat(Path(dir))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("pairings file mode %v (%v)", info.Mode(), err)
	}
	data, _ := os.ReadFile(Path(dir))
	if strings.Contains(string(data), bearer) || strings.Contains(string(data), bearer[len(BearerPrefix):]) {
		t.Fatal("the bearer is stored")
	}
	var doc struct {
		Version  int
		Pairings []map[string]string
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Version != 1 || len(doc.Pairings) != 1 ||
		doc.Pairings[0]["created"] != "2026-11-29T06:00:00Z" || len(doc.Pairings[0]["sha256"]) != 64 || len(doc.Pairings[0]) != 3 {
		t.Fatalf("file %s", data)
	}
	if _, err := Add(dir, "laptop", now); !errors.Is(err, ErrExists) {
		t.Errorf("second add: %v", err)
	}
	if _, err := Add(dir, "aardvark", now); err != nil {
		t.Fatal(err)
	}
	ps, err := List(dir)
	if err != nil || len(ps) != 2 || ps[0].Name != "aardvark" || ps[1].Name != "laptop" {
		t.Fatalf("list %+v %v", ps, err)
	}
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if name, d, ok := set.Match(bearer); !ok || name != "laptop" || d != DigestOf(bearer) || !set.Has("laptop", d) {
		t.Errorf("match %q %v", name, ok)
	}
	if err := SaveCatalog(dir, "laptop", nil); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir, "laptop"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := LoadCatalog(dir, "laptop"); ok {
		t.Error("Remove left the remembered catalog")
	}
	if err := Remove(dir, "laptop"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second remove: %v", err)
	}
	set, _ = Load(dir)
	if _, _, ok := set.Match(bearer); ok || set.Len() != 1 {
		t.Error("the removed bearer still matches")
	}
}

func TestMatchRefusesNearMisses(t *testing.T) {
	dir := t.TempDir()
	bearer, _ := Add(dir, "lab", now)
	set, _ := Load(dir)
	flip := []byte(bearer)
	flip[len(flip)-1] ^= 1
	for _, b := range []string{"", bearer[:len(bearer)-1], bearer + "A", string(flip), strings.ToUpper(bearer), " " + bearer, bearer[len(BearerPrefix):]} {
		if _, _, ok := set.Match(b); ok {
			t.Errorf("%q matched", b)
		}
	}
	if _, _, ok := Empty().Match(bearer); ok {
		t.Error("the empty set matched")
	}
}

func TestNamesAreChecked(t *testing.T) {
	for _, name := range []string{"", "Laptop", "-x", "a b", "../x", "a/b", strings.Repeat("a", 65), "é"} {
		if _, err := Add(t.TempDir(), name, now); !errors.Is(err, ErrNameInvalid) {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := Add(t.TempDir(), strings.Repeat("a", 64), now); err != nil {
		t.Error(err)
	}
}

func TestUnsafeOrInvalidFileRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := Add(dir, "lab", now); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660} {
		os.Chmod(Path(dir), mode)
		if _, err := Load(dir); !errors.Is(err, ErrFileOpen) {
			t.Errorf("mode %v: %v", mode, err)
		}
		if _, err := Add(dir, "other", now); !errors.Is(err, ErrFileOpen) {
			t.Errorf("add with mode %v: %v", mode, err)
		}
	}
	hex := strings.Repeat("ab", 32)
	for name, body := range map[string]string{
		"not json":       `{`,
		"version 2":      `{"version":2,"pairings":[]}`,
		"unknown key":    `{"version":1,"pairings":[],"grant":"all"}`,
		"entry key":      `{"version":1,"pairings":[{"name":"a","sha256":"` + hex + `","created":"2026-11-29T06:00:00Z","bearer":"vbx_x"}]}`,
		"bad name":       `{"version":1,"pairings":[{"name":"A","sha256":"` + hex + `","created":"2026-11-29T06:00:00Z"}]}`,
		"short digest":   `{"version":1,"pairings":[{"name":"a","sha256":"abcd","created":"2026-11-29T06:00:00Z"}]}`,
		"bad time":       `{"version":1,"pairings":[{"name":"a","sha256":"` + hex + `","created":"yesterday"}]}`,
		"duplicate name": `{"version":1,"pairings":[{"name":"a","sha256":"` + hex + `","created":"2026-11-29T06:00:00Z"},{"name":"a","sha256":"` + hex + `","created":"2026-11-29T06:00:00Z"}]}`,
	} {
		if err := os.WriteFile(Path(dir), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(Path(dir), 0o600)
		if _, err := Load(dir); !errors.Is(err, ErrFileInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	os.Remove(Path(dir))
	if set, err := Load(dir); err != nil || set.Len() != 0 {
		t.Errorf("missing file: %v", err)
	}
}

// TestConcurrentAddsKeepEveryPairing: the lock serializes writers, so no
// add is lost however many run at once.
func TestConcurrentAddsKeepEveryPairing(t *testing.T) {
	dir := t.TempDir()
	const n = 32
	var wg sync.WaitGroup
	bearers := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := Add(dir, fmt.Sprintf("env%02d", i), now)
			if err != nil {
				t.Error(err)
			}
			bearers[i] = b
		}()
	}
	wg.Wait()
	set, err := Load(dir)
	if err != nil || set.Len() != n {
		t.Fatalf("%d pairings after %d concurrent adds (%v)", set.Len(), n, err)
	}
	for i, b := range bearers {
		if name, _, ok := set.Match(b); !ok || name != fmt.Sprintf("env%02d", i) {
			t.Errorf("bearer %d matches %q", i, name)
		}
	}
}

func TestCatalogFiles(t *testing.T) {
	dir := t.TempDir()
	ds := []wire.Descriptor{{DescriptorID: "fx", Tools: []wire.Tool{{Name: "t", InputSchema: json.RawMessage(`{}`)}},
		Bounds: wire.Bounds{TimeoutMs: 1, MemoryMiB: 1, MaxOutputBytes: 1}}}
	if err := SaveCatalog(dir, "lab", ds); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadCatalog(dir, "lab")
	if err != nil || !ok || len(got) != 1 || got[0].DescriptorID != "fx" {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
	os.WriteFile(CatalogPath(dir, "lab"), []byte(`{"type":"catalog","descriptors":[{}]}`), 0o600)
	if _, _, err := LoadCatalog(dir, "lab"); err == nil {
		t.Error("an invalid remembered catalog was accepted")
	}
	if _, _, err := LoadCatalog(dir, "../x"); !errors.Is(err, ErrNameInvalid) {
		t.Error("a path as a name")
	}
	if err := ForgetCatalog(dir, "nothing"); err != nil {
		t.Error(err)
	}
}

func TestWatchSeesChanges(t *testing.T) {
	dir := t.TempDir()
	changed := make(chan struct{}, 16)
	w, err := Watch(dir, 20*time.Millisecond, nil, func() { changed <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	os.WriteFile(filepath.Join(dir, "unrelated"), []byte("x"), 0o600)
	if _, err := Add(dir, "lab", now); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(60 * time.Second):
		t.Fatal("no change seen after pair add")
	}
	if err := Remove(dir, "lab"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(60 * time.Second):
		t.Fatal("no change seen after pair rm")
	}
	w.Stop() // idempotent with the deferred one
}
