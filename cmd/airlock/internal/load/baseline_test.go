package load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// pluginsBroker answers GET /v1/plugins with one plugin of origin.
func pluginsBroker(t *testing.T, id, origin string) *v1client.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"plugins": []wire.PluginStatus{{ID: id, Origin: origin, Admitted: true}}})
	}))
	t.Cleanup(srv.Close)
	return &v1client.Client{Base: srv.URL, Token: "t", HTTP: srv.Client()}
}

func TestChooseBaselineDefault(t *testing.T) {
	ctx := context.Background()
	notes := wire.Call{Tool: "read_notes", DescriptorID: "notes"}
	roots := map[string]string{"notes": t.TempDir()}
	b, err := ChooseBaseline(ctx, "", notes, roots, pluginsBroker(t, "notes", plugins.OriginBuiltin))
	if err != nil || b.Skipped != "" || b.Label != "builtin:notes" || len(b.Module) == 0 || b.Roots["notes"] != roots["notes"] {
		t.Fatalf("bundled notes: %+v %v", b.Skipped, err)
	}
	for name, c := range map[string]struct {
		call   wire.Call
		roots  map[string]string
		origin string
		why    string
	}{
		"no root":         {notes, map[string]string{}, plugins.OriginBuiltin, "add --root notes=DIR"},
		"replaced":        {notes, roots, plugins.OriginPlugins, "comes from its plugins folder"},
		"not bundled":     {wire.Call{Tool: "echo", DescriptorID: "fx"}, roots, plugins.OriginPlugins, "echo is not a bundled tool"},
		"other id's tool": {wire.Call{Tool: "fetch_url", DescriptorID: "notes"}, roots, plugins.OriginBuiltin, "fetch_url is not a bundled tool"},
		"fetches":         {wire.Call{Tool: "fetch_url", DescriptorID: "web"}, roots, plugins.OriginBuiltin, "fetches over the network"},
	} {
		b, err := ChooseBaseline(ctx, "", c.call, c.roots, pluginsBroker(t, c.call.DescriptorID, c.origin))
		if err != nil || !strings.Contains(b.Skipped, c.why) || b.Module != nil {
			t.Errorf("%s: skipped %q, err %v; want the reason %q", name, b.Skipped, err, c.why)
		}
	}
}

func TestChooseBaselineExplicit(t *testing.T) {
	ctx := context.Background()
	call := wire.Call{Tool: "read_notes", DescriptorID: "notes"}
	if b, err := ChooseBaseline(ctx, "none", call, nil, nil); err != nil || b.Skipped != "--baseline none" {
		t.Fatalf("none: %+v %v", b, err)
	}
	if _, err := ChooseBaseline(ctx, "builtin:notes", call, map[string]string{}, nil); err == nil || !strings.Contains(err.Error(), "--root notes=DIR") {
		t.Fatalf("builtin without its root: %v", err)
	}
	if _, err := ChooseBaseline(ctx, "builtin:nope", call, map[string]string{}, nil); err == nil {
		t.Fatal("an unknown bundled plugin")
	}
	dir := folderOf(t, "notes")
	b, err := ChooseBaseline(ctx, dir, call, map[string]string{"notes": t.TempDir()}, nil)
	if err != nil || b.Label != dir || len(b.Module) == 0 {
		t.Fatalf("a plugin folder: %v", err)
	}
	if _, err := ChooseBaseline(ctx, dir, wire.Call{Tool: "fetch_url"}, map[string]string{"notes": "x"}, nil); err == nil || !strings.Contains(err.Error(), "does not declare fetch_url") {
		t.Fatalf("a tool the folder lacks: %v", err)
	}
	tampered := folderOf(t, "notes")
	module := filepath.Join(tampered, "notes.wasm")
	data, _ := os.ReadFile(module)
	if err := os.WriteFile(module, append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ChooseBaseline(ctx, tampered, call, map[string]string{"notes": "x"}, nil); err == nil || !strings.Contains(err.Error(), "sha256") {
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

// TestBrokerCacheDir: the baseline compiles through the broker's cache
// (DATA/compile-cache, or exec.cache_dir) only when that folder exists.
func TestBrokerCacheDir(t *testing.T) {
	data := t.TempDir()
	cfg := func(environ ...string) *config.Config {
		t.Helper()
		c, err := config.Load(config.Sources{Environ: environ, Flags: map[string]any{"data": data}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if dir := BrokerCacheDir(cfg()); dir != "" {
		t.Fatalf("no cache yet: %q", dir)
	}
	want := filepath.Join(data, "compile-cache")
	if err := os.Mkdir(want, 0o700); err != nil {
		t.Fatal(err)
	}
	if dir := BrokerCacheDir(cfg()); dir != want {
		t.Fatalf("the broker's cache: %q", dir)
	}
	if dir := BrokerCacheDir(cfg("AIRLOCK_EXEC_CACHE_DIR=" + data)); dir != data {
		t.Fatalf("exec.cache_dir: %q", dir)
	}
}
