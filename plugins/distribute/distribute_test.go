package distribute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/plugins"
)

// TestLoopback: plain HTTP is for 127.0.0.0/8, ::1 and localhost, judged
// by spelling alone.
func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:5000": true, "127.1.2.3": true, "[::1]:5000": true, "localhost:5000": true, "LOCALHOST": true,
		"registry.example": false, "registry.example:5000": false, "10.0.0.1:5000": false, "[::2]:80": false,
		"localhost.example": false, "0.0.0.0:5000": false, "127.0.0.1.nip.io": false,
	} {
		if got := loopback(host); got != want {
			t.Errorf("loopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestRefusedBeforeTheNetwork: a plain-HTTP reference off the loopback,
// a reference without a tag, and a folder admission would refuse are
// refused by name without any connection (the registries named do not
// exist).
func TestRefusedBeforeTheNetwork(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Pull(ctx, "registry.example/plugins/web:1", dir, Options{PlainHTTP: true}); !errors.Is(err, ErrPlainHTTP) {
		t.Errorf("plain HTTP to registry.example: %v", err)
	}
	if _, err := Push(ctx, dir, "registry.example/plugins/web:1", Options{PlainHTTP: true}); !errors.Is(err, ErrPlainHTTP) {
		t.Errorf("push over plain HTTP to registry.example: %v", err)
	}
	if _, err := Pull(ctx, "registry.example/plugins/web", dir, Options{}); !errors.Is(err, ErrReference) {
		t.Errorf("no tag: %v", err)
	}
	if _, err := Push(ctx, dir, "registry.example/plugins/web@sha256:"+strings.Repeat("0", 64), Options{}); !errors.Is(err, ErrReference) {
		t.Errorf("push by digest: %v", err)
	}
	if _, err := Pull(ctx, "registry.example/../x:1", dir, Options{}); !errors.Is(err, ErrReference) {
		t.Errorf("a path in the repository: %v", err)
	}
	plugin := filepath.Join(dir, "p")
	if err := os.Mkdir(plugin, 0o755); err != nil {
		t.Fatal(err)
	}
	m := `{"id":"p","version":"1","module":"p.wasm","sha256":"` + strings.Repeat("0", 64) + `","tools":[{"name":"t","description":"d","inputSchema":{"type":"object"}}],"bounds":{"timeoutMs":1000,"memoryMiB":16,"maxOutputBytes":1024,"maxRequests":0,"allowedHosts":[],"roots":[]}}`
	if err := os.WriteFile(filepath.Join(plugin, plugins.ManifestName), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugin, "p.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Push(ctx, plugin, "127.0.0.1:1/plugins/p:1", Options{PlainHTTP: true})
	if !errors.Is(err, ErrPluginInvalid) || !strings.Contains(err.Error(), plugins.ReasonHashMismatch) {
		t.Errorf("a module its sha256 does not name: %v", err)
	}
}

// TestReason names each sentinel, wrapped or not, and nothing else.
func TestReason(t *testing.T) {
	for _, r := range reasons {
		if got := Reason(fmt.Errorf("x: %w", refuse(r, "y"))); got != r.Error() {
			t.Errorf("Reason = %q, want %q", got, r)
		}
	}
	if got := Reason(errors.New("other")); got != "" {
		t.Errorf("Reason of another error = %q", got)
	}
}

// TestInstall: a new folder is renamed into place; an existing one is
// replaced whole; a link where the folder belongs is not replaced.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	stage := func(content string) string {
		s, err := os.MkdirTemp(dir, ".pull-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s, "f"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return s
	}
	final := filepath.Join(dir, "p")
	if replaced, err := install(stage("one"), final); err != nil || replaced {
		t.Fatalf("install: %v %v", replaced, err)
	}
	if replaced, err := install(stage("two"), final); err != nil || !replaced {
		t.Fatalf("replace: %v %v", replaced, err)
	}
	if got, _ := os.ReadFile(filepath.Join(final, "f")); string(got) != "two" {
		t.Errorf("after replacing: %q", got)
	}
	link := filepath.Join(dir, "q")
	if err := os.Symlink(final, link); err != nil {
		t.Fatal(err)
	}
	if _, err := install(stage("three"), link); !errors.Is(err, ErrInstallConflict) {
		t.Errorf("over a link: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); !strings.HasPrefix(got, ".pull-") || !strings.HasSuffix(got, "p q") {
		t.Errorf("the folder holds %s (the refused stage is the caller's to remove)", got)
	}
}

// TestProgressReader reports each quarter once.
func TestProgressReader(t *testing.T) {
	var out bytes.Buffer
	r := &progressReader{r: bytes.NewReader(make([]byte, 1000)), w: &out, total: 1000}
	buf := make([]byte, 100)
	for {
		if _, err := r.Read(buf); err != nil {
			break
		}
	}
	if got := strings.Count(out.String(), "\n"); got != 4 || !strings.Contains(out.String(), "100% (1000 of 1000 bytes)") {
		t.Errorf("progress:\n%s", out.String())
	}
}
