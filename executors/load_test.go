package executors

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var ae *AdmissionError
	if !errors.As(err, &ae) || ae.Reason != reason {
		t.Fatalf("Load error %v, want admission reason %s", err, reason)
	}
	if ae.Err == nil || errors.Unwrap(err) != ae.Err {
		t.Fatalf("admission error without its cause: %#v", ae)
	}
}

func TestAdmission(t *testing.T) {
	r := newRuntime(t, Config{})
	guest := testkit.Fixture(t, "guest.wasm")
	for _, c := range []struct {
		file, reason string
		memoryMiB    int
	}{
		{"imports-env.wasm", ReasonImportsRefused, 64},
		{"imports-airlock-bogus.wasm", ReasonImportsRefused, 64},
		{"imports-wrong-signature.wasm", ReasonImportsRefused, 64},
		{"imports-global.wasm", ReasonImportsRefused, 64},
		{"noabi.wasm", ReasonABIInvalid, 64},
		{"reactor-partial.wasm", ReasonABIInvalid, 64},
		{"hugemem.wasm", ReasonMemoryInvalid, 64},
		{"hugemem.wasm", "", 128}, // 2048 pages is exactly 128 MiB
		{"silent.wasm", "", 1},
	} {
		b := defaultBounds()
		b.MemoryMiB = c.memoryMiB
		p, err := r.Load(context.Background(), guestDescriptor("guest", b), testkit.Fixture(t, c.file))
		if c.reason == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			p.Close(context.Background())
			continue
		}
		wantReason(t, err, c.reason)
		if p != nil {
			t.Fatalf("%s: a refused Load returned a program", c.file)
		}
	}
	// memory-invalid names the bound the operator sets, in its unit.
	b := defaultBounds()
	b.MemoryMiB = 64
	_, err := r.Load(context.Background(), guestDescriptor("guest", b), testkit.Fixture(t, "hugemem.wasm"))
	if want := "the module declares at least 128 MiB of memory, over bounds.memoryMiB 64"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("memory-invalid: %v, want %q", err, want)
	}
	for _, bad := range [][]byte{nil, []byte("not wasm"), guest[:len(guest)/2]} {
		_, err := r.Load(context.Background(), guestDescriptor("guest", defaultBounds()), bad)
		wantReason(t, err, ReasonCompileFailed)
	}
}

func TestStyleDetection(t *testing.T) {
	r := newRuntime(t, Config{})
	for file, want := range map[string]style{"guest.wasm": styleCommand, "guest-reactor.wasm": styleReactor} {
		if p := load(t, r, guestDescriptor("guest", defaultBounds()), testkit.Fixture(t, file)); p.style != want {
			t.Fatalf("%s detected as %v", file, p.style)
		}
	}
}

func TestSchemaAdmission(t *testing.T) {
	r := newRuntime(t, Config{})
	for schema, reason := range map[string]string{
		`{"type":12}`:                                                           ReasonSchemaInvalid,
		`{"type":"object","minProperties":-1}`:                                  ReasonSchemaInvalid,
		`{"$ref":"file:///etc/passwd"}`:                                         ReasonSchemaInvalid, // no loader: nothing is read
		`{"$ref":"https://example.com/s.json"}`:                                 ReasonSchemaInvalid,
		`{"$ref":"other.json"}`:                                                 ReasonSchemaInvalid,
		`{"type":"object","pattern":"("}`:                                       ReasonSchemaInvalid,
		`{"$ref":"#/$defs/o","$defs":{"o":{"type":"object"}}}`:                  "",
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`: "",
	} {
		d := guestDescriptor("guest", defaultBounds())
		d.Tools[0].InputSchema = json.RawMessage(schema)
		p, err := r.Load(context.Background(), d, testkit.Fixture(t, "silent.wasm"))
		if reason == "" {
			if err != nil {
				t.Fatalf("%s: %v", schema, err)
			}
			p.Close(context.Background())
			continue
		}
		if err == nil {
			p.Close(context.Background())
			t.Fatalf("%s admitted", schema)
		}
		wantReason(t, err, reason)
	}
}

func TestDescriptorInvalid(t *testing.T) {
	r := newRuntime(t, Config{})
	d := guestDescriptor("guest", defaultBounds())
	d.Tools = nil
	_, err := r.Load(context.Background(), d, testkit.Fixture(t, "silent.wasm"))
	wantReason(t, err, ReasonDescriptorInvalid)
	d = guestDescriptor("guest", defaultBounds())
	d.Bounds.TimeoutMs = 0
	_, err = r.Load(context.Background(), d, testkit.Fixture(t, "silent.wasm"))
	wantReason(t, err, ReasonDescriptorInvalid)
}

// TestDescriptorIsCopied: changing the caller's descriptor after Load
// does not change what was admitted.
func TestDescriptorIsCopied(t *testing.T) {
	r := newRuntime(t, Config{})
	d := guestDescriptor("guest", fetchBounds(1, "example.com"))
	p := load(t, r, d, testkit.Fixture(t, "silent.wasm"))
	d.Bounds.AllowedHosts[0] = "evil.example"
	d.Tools[0].Name = "renamed"
	got := p.Descriptor()
	if got.Bounds.AllowedHosts[0] != "example.com" || got.Tools[0].Name != "echo" {
		t.Fatalf("admitted descriptor changed: %+v", got)
	}
	got.Bounds.AllowedHosts[0] = "evil.example"
	if p.Descriptor().Bounds.AllowedHosts[0] != "example.com" {
		t.Fatal("Descriptor returned shared slices")
	}
}

func TestCompilationCache(t *testing.T) {
	dir := t.TempDir()
	d := guestDescriptor("guest", defaultBounds())
	module := testkit.Fixture(t, "unreachable.wasm")
	first := newRuntime(t, Config{CacheDir: dir})
	load(t, first, d, module)
	before := cacheFiles(t, dir)
	if len(before) == 0 {
		t.Fatal("no compilation cache files written")
	}
	second := newRuntime(t, Config{CacheDir: dir})
	p := load(t, second, d, module)
	wantRule(t, call(t, p, "echo", `{}`), wire.ExecThrew) // it runs (and traps)
	if after := cacheFiles(t, dir); !slices.Equal(before, after) {
		t.Fatalf("second runtime compiled again: cache %v then %v", before, after)
	}
}

func cacheFiles(t *testing.T, dir string) []string {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestConfigDefaults(t *testing.T) {
	r := newRuntime(t, Config{})
	c := r.cfg
	if c.MaxConcurrent != DefaultMaxConcurrent || c.MaxFetchBytes != DefaultMaxFetchBytes ||
		c.MaxStderrBytes != DefaultMaxStderrBytes || c.PoolSize != DefaultPoolSize || c.Logger == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if _, err := NewRuntime(context.Background(), Config{PoolSize: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative PoolSize: %v", err)
	}
}

func TestReadBinary(t *testing.T) {
	info, err := readBinary(testkit.Fixture(t, "imports-global.wasm"))
	if err != nil || len(info.imports) != 1 || info.imports[0] != (wasmImport{"airlock", "counter", kindGlobal}) {
		t.Fatalf("imports-global: %+v %v", info, err)
	}
	info, err = readBinary(testkit.Fixture(t, "hugemem.wasm"))
	if err != nil || info.minPages != 2048 {
		t.Fatalf("hugemem: %+v %v", info, err)
	}
	info, err = readBinary(testkit.Fixture(t, "guest.wasm"))
	if err != nil || len(info.imports) == 0 || info.minPages == 0 {
		t.Fatalf("guest: %d imports, %d pages, %v", len(info.imports), info.minPages, err)
	}
	for _, bad := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x01\x00\x00\x00\x02\x05\x01"),
		[]byte("\x00asm\x01\x00\x00\x00\x05\x02\x01\x09"), []byte("\x00asm\x01\x00\x00\x00\x05\xff\xff\xff\xff\xff\xff")} {
		if _, err := readBinary(bad); !errors.Is(err, ErrBadBinary) {
			t.Fatalf("readBinary(%q) = %v", bad, err)
		}
	}
}

func TestLinearMemory(t *testing.T) {
	a := newAllocator(1) // 1 MiB = 16 pages
	m := a.Allocate(2*pageBytes, 65536*pageBytes)
	if b := m.Reallocate(pageBytes); len(b) != pageBytes {
		t.Fatalf("initial allocation %d", len(b))
	}
	m.Reallocate(pageBytes)[10] = 7
	b := m.Reallocate(16 * pageBytes)
	if len(b) != 16*pageBytes || b[10] != 7 || a.exhausted() {
		t.Fatalf("growth to the limit: len %d, kept %d, exhausted %v", len(b), b[10], a.exhausted())
	}
	if m.Reallocate(17*pageBytes) != nil || !a.exhausted() {
		t.Fatal("growth past the limit was not refused and recorded")
	}
	a.reset()
	if a.exhausted() {
		t.Fatal("reset kept the flag")
	}
	m.Free()
}
