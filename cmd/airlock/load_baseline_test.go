package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// pluginsBroker answers GET /v1/plugins with one plugin of origin.
func pluginsBroker(t *testing.T, id, origin string) *v1Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"plugins": []plugins.Status{{ID: id, Origin: origin, Admitted: true}}})
	}))
	t.Cleanup(srv.Close)
	return &v1Client{base: srv.URL, token: "t", http: srv.Client()}
}

func TestChooseBaselineDefault(t *testing.T) {
	ctx := context.Background()
	notes := wire.Call{Tool: "read_notes", DescriptorID: "notes"}
	roots := rootsFlag{"notes": t.TempDir()}
	b, err := chooseBaseline(ctx, "", notes, roots, pluginsBroker(t, "notes", plugins.OriginBuiltin))
	if err != nil || b.skipped != "" || b.label != "builtin:notes" || len(b.module) == 0 || b.roots["notes"] != roots["notes"] {
		t.Fatalf("bundled notes: %+v %v", b.skipped, err)
	}
	for name, c := range map[string]struct {
		call   wire.Call
		roots  rootsFlag
		origin string
		why    string
	}{
		"no root":         {notes, rootsFlag{}, plugins.OriginBuiltin, "add --root notes=DIR"},
		"replaced":        {notes, roots, plugins.OriginPlugins, "comes from its plugins folder"},
		"not bundled":     {wire.Call{Tool: "echo", DescriptorID: "fx"}, roots, plugins.OriginPlugins, "echo is not a bundled tool"},
		"other id's tool": {wire.Call{Tool: "fetch_url", DescriptorID: "notes"}, roots, plugins.OriginBuiltin, "fetch_url is not a bundled tool"},
		"fetches":         {wire.Call{Tool: "fetch_url", DescriptorID: "web"}, roots, plugins.OriginBuiltin, "fetches over the network"},
	} {
		b, err := chooseBaseline(ctx, "", c.call, c.roots, pluginsBroker(t, c.call.DescriptorID, c.origin))
		if err != nil || !strings.Contains(b.skipped, c.why) || b.module != nil {
			t.Errorf("%s: skipped %q, err %v; want the reason %q", name, b.skipped, err, c.why)
		}
	}
}

func TestChooseBaselineExplicit(t *testing.T) {
	ctx := context.Background()
	call := wire.Call{Tool: "read_notes", DescriptorID: "notes"}
	if b, err := chooseBaseline(ctx, "none", call, nil, nil); err != nil || b.skipped != "--baseline none" {
		t.Fatalf("none: %+v %v", b, err)
	}
	if _, err := chooseBaseline(ctx, "builtin:notes", call, rootsFlag{}, nil); err == nil || !strings.Contains(err.Error(), "--root notes=DIR") {
		t.Fatalf("builtin without its root: %v", err)
	}
	if _, err := chooseBaseline(ctx, "builtin:nope", call, rootsFlag{}, nil); err == nil {
		t.Fatal("an unknown bundled plugin")
	}
	dir := folderOf(t, "notes")
	b, err := chooseBaseline(ctx, dir, call, rootsFlag{"notes": t.TempDir()}, nil)
	if err != nil || b.label != dir || len(b.module) == 0 {
		t.Fatalf("a plugin folder: %v", err)
	}
	if _, err := chooseBaseline(ctx, dir, wire.Call{Tool: "fetch_url"}, rootsFlag{"notes": "x"}, nil); err == nil || !strings.Contains(err.Error(), "does not declare fetch_url") {
		t.Fatalf("a tool the folder lacks: %v", err)
	}
	tampered := folderOf(t, "notes")
	module := filepath.Join(tampered, "notes.wasm")
	data, _ := os.ReadFile(module)
	if err := os.WriteFile(module, append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chooseBaseline(ctx, tampered, call, rootsFlag{"notes": "x"}, nil); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a module that is not the one its manifest hashes: %v", err)
	}
}

// folderOf copies the bundled plugin id into a plugins folder, the way
// an operator drops one in, and returns the plugin's folder.
func folderOf(t *testing.T, id string) string {
	t.Helper()
	m, module, err := readPlugin(bundledPlugin(id))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := plugins.WriteFolder(dir, m, module); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, id)
}

func TestBrokerCacheDir(t *testing.T) {
	defer func(e func() []string) { environ = e }(environ)
	environ = func() []string { return nil }
	data := t.TempDir()
	fs := newFlags("load calls", io.Discard)
	sf := addSettingsFlags(fs, "data")
	if err := fs.Parse([]string{"--data", data}); err != nil {
		t.Fatal(err)
	}
	if dir, err := brokerCacheDir(sf); err != nil || dir != "" {
		t.Fatalf("no cache yet: %q %v", dir, err)
	}
	want := filepath.Join(data, "compile-cache")
	if err := os.Mkdir(want, 0o700); err != nil {
		t.Fatal(err)
	}
	if dir, err := brokerCacheDir(sf); err != nil || dir != want {
		t.Fatalf("the broker's cache: %q %v", dir, err)
	}
	environ = func() []string { return []string{"AIRLOCK_EXEC_CACHE_DIR=" + data} }
	if dir, err := brokerCacheDir(sf); err != nil || dir != data {
		t.Fatalf("exec.cache_dir: %q %v", dir, err)
	}
}
