package plugins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// TestPluginConfigOpenAndReload: Open hands the config's plugin values to
// the runtime, admission warns by name about declared names left unset
// and set names left undeclared, and Reload takes a rotated secret file,
// or keeps the values when the file is refused, never logging a value.
func TestPluginConfigOpenAndReload(t *testing.T) {
	const secret, rotated = "weather-secret-0c4d", "weather-rotated-9e1f"
	dir := t.TempDir()
	pluginsDir, data, key := filepath.Join(dir, "plugins"), filepath.Join(dir, "data"), filepath.Join(dir, "key")
	for _, d := range []string{pluginsDir, data} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(key, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "airlock.yaml")
	yaml := "plugin_config:\n  weather:\n    api_key: {file: " + key + "}\n    typo_name: x\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	m := plugins.Manifest{ID: "weather", Version: "1.0.0", Module: "configured.wasm", Config: []string{"api_key", "unset_name"},
		Tools:  []wire.Tool{{Name: "derive", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Bounds: wire.Bounds{TimeoutMs: 60000, MemoryMiB: 64, MaxOutputBytes: 1 << 20}}
	if err := plugins.WriteFolder(pluginsDir, m, testkit.Fixture(t, "configured-reactor.wasm")); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{File: file, Flags: map[string]any{
		"data": data, "plugins": pluginsDir, "no_builtin": true, "exec.cache_dir": cacheDir}})
	if err != nil {
		t.Fatal(err)
	}
	var log testkit.Buffer
	e, err := plugins.Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(&log, nil)), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Close(ctx)
	})
	// The module compiles after Open returns; a call made before it is
	// compiled would wait within the tool's bound, which a cold compile
	// under the race detector on a loaded machine can outlast.
	if err := e.Catalog.WaitCompiled(context.Background()); err != nil {
		t.Fatal(err)
	}
	derive := func() string {
		t.Helper()
		p, ok := e.Table.Get("weather")
		if !ok {
			t.Fatalf("weather not admitted: %+v", e.Catalog.Statuses())
		}
		bounds, _ := json.Marshal(p.Descriptor().Bounds)
		a := e.Table.Call(context.Background(), wire.Call{V: 1, CallID: "c1", Tool: "derive", DescriptorID: "weather",
			Args: json.RawMessage(`{"name":"api_key"}`), BoundsEcho: bounds})
		var d struct{ SHA256 string }
		if !a.OK || json.Unmarshal(a.Observed, &d) != nil {
			t.Fatalf("derive: %+v", a)
		}
		return d.SHA256
	}
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	if got := derive(); got != hash(secret) {
		t.Fatalf("derived %s, want the hash of the file's value", got)
	}
	for _, want := range []string{`"names":["unset_name"]`, `"names":["typo_name"]`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("admission does not warn about %s:\n%s", want, log.String())
		}
	}

	if err := os.WriteFile(key, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Reload(context.Background())
	if got := derive(); got != hash(rotated) {
		t.Fatalf("after a reload derived %s, want the rotated value's hash", got)
	}
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	e.Reload(context.Background())
	if got := derive(); got != hash(rotated) {
		t.Fatalf("a refused reload changed the value")
	}
	logged := log.String()
	if !strings.Contains(logged, "plugin config not reloaded") || !strings.Contains(logged, key+" is readable by group or others") {
		t.Errorf("the refused reload is not logged with its path:\n%s", logged)
	}
	if strings.Contains(logged, secret) || strings.Contains(logged, rotated) {
		t.Errorf("a value reached the log:\n%s", logged)
	}
}
