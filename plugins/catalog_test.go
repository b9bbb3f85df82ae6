package plugins_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins"
)

var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-plugins-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// guestManifest describes the guest fixture as plugin id.
func guestManifest(id string) plugins.Manifest {
	return plugins.Manifest{
		ID: id, Version: "1.0.0", Module: "guest.wasm",
		Tools: []wire.Tool{
			{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "readfile", Description: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		},
		// A time bound no echo reaches, however loaded the machine: the
		// calls of these tests end by their rule, never by the clock.
		Bounds: wire.Bounds{TimeoutMs: 60000, MemoryMiB: 64, MaxOutputBytes: 1 << 20},
	}
}

type env struct {
	dir   string
	rt    *executors.Runtime
	table *executors.Table
	cat   *plugins.Catalog
	reg   *metrics.Registry
}

func newEnv(t *testing.T, builtin fstest.MapFS, roots map[string]string) *env {
	t.Helper()
	return newEnvWith(t, builtin, roots, false)
}

// newEnvWith is newEnv with the catalog's Options.Background.
func newEnvWith(t *testing.T, builtin fstest.MapFS, roots map[string]string, background bool) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{dir: t.TempDir(), table: executors.NewTable(), reg: metrics.New()}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rt, err := executors.NewRuntime(ctx, executors.Config{
		CacheDir: cacheDir, Roots: roots, MaxConcurrent: 4, MaxFetchBytes: 1 << 20, MaxStderrBytes: 1 << 10, PoolSize: 1, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.rt = rt
	opts := plugins.Options{Runtime: rt, Table: e.table, Dir: e.dir, Logger: logger, Metrics: e.reg, Background: background}
	if builtin != nil {
		opts.Builtin = builtin
	}
	e.cat, err = plugins.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.cat.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return e
}

func (e *env) status(t *testing.T, id string) wire.PluginStatus {
	t.Helper()
	for _, s := range e.cat.Statuses() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no status for %s in %+v", id, e.cat.Statuses())
	return wire.PluginStatus{}
}

func (e *env) call(id, tool string, args string) wire.Answer {
	var bounds json.RawMessage
	if p, ok := e.table.Get(id); ok {
		bounds, _ = json.Marshal(p.Descriptor().Bounds)
	} else {
		bounds = json.RawMessage(`{}`)
	}
	return e.table.Call(context.Background(), wire.Call{V: 1, CallID: "c1", Tool: tool, DescriptorID: id, Args: json.RawMessage(args), BoundsEcho: bounds})
}

func TestAdmitsAValidFolder(t *testing.T) {
	e := newEnv(t, nil, nil)
	if err := plugins.WriteFolder(e.dir, guestManifest("fx"), testkit.Fixture(t, "guest.wasm")); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())
	if s := e.status(t, "fx"); !s.Admitted || s.Origin != plugins.OriginPlugins || s.Version != "1.0.0" {
		t.Fatalf("status %+v", s)
	}
	if a := e.call("fx", "echo", `{"hello":"world"}`); !a.OK || string(a.Observed) != `{"hello":"world"}` {
		t.Fatalf("call through the admitted program: %+v", a)
	}
	if got := testutil.ToFloat64(e.reg.PluginsAdmitted); got != 1 {
		t.Errorf("plugins_admitted = %v", got)
	}
}

func TestRefusals(t *testing.T) {
	guest := testkit.Fixture(t, "guest.wasm")
	cases := map[string]struct {
		write  func(t *testing.T, dir string)
		reason string
	}{
		"hash mismatch": {func(t *testing.T, dir string) {
			writeRaw(t, dir, "fx", guestManifest("fx"), guest, strings.Repeat("0", 64))
		}, plugins.ReasonHashMismatch},
		"id differs from folder": {func(t *testing.T, dir string) {
			m := guestManifest("other")
			writeRaw(t, dir, "fx", m, guest, plugins.HashModule(guest))
		}, plugins.ReasonDescriptorInvalid},
		"unknown manifest key": {func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "fx"), 0o755)
			os.WriteFile(filepath.Join(dir, "fx", "plugin.json"), []byte(`{"id":"fx","grant":"all"}`), 0o644)
		}, plugins.ReasonDescriptorInvalid},
		"no manifest": {func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "fx"), 0o755)
		}, plugins.ReasonDescriptorInvalid},
		"bad bounds": {func(t *testing.T, dir string) {
			m := guestManifest("fx")
			m.Bounds.TimeoutMs = 0
			plugins.WriteFolder(dir, m, guest)
		}, plugins.ReasonDescriptorInvalid},
		"module missing": {func(t *testing.T, dir string) {
			writeRaw(t, dir, "fx", guestManifest("fx"), nil, plugins.HashModule(guest))
		}, plugins.ReasonModuleMissing},
		"foreign import": {func(t *testing.T, dir string) {
			plugins.WriteFolder(dir, guestManifest("fx"), testkit.Fixture(t, "imports-env.wasm"))
		}, executors.ReasonImportsRefused},
		"unmapped root": {func(t *testing.T, dir string) {
			m := guestManifest("fx")
			m.Bounds.Roots = []string{"secrets"}
			plugins.WriteFolder(dir, m, guest)
		}, executors.ReasonRootUnmapped},
		"not wasm": {func(t *testing.T, dir string) {
			plugins.WriteFolder(dir, guestManifest("fx"), []byte("#!/bin/sh\necho hi\n"))
		}, executors.ReasonCompileFailed},
		"bad schema": {func(t *testing.T, dir string) {
			m := guestManifest("fx")
			m.Tools[0].InputSchema = json.RawMessage(`{"type":"no-such-type"}`)
			plugins.WriteFolder(dir, m, guest)
		}, executors.ReasonSchemaInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, nil)
			c.write(t, e.dir)
			e.cat.Scan(context.Background())
			s := e.status(t, "fx")
			if s.Admitted || s.Reason != c.reason || s.Detail == "" {
				t.Fatalf("status %+v, want refused %s", s, c.reason)
			}
			if _, ok := e.table.Get("fx"); ok {
				t.Error("a refused plugin is in the table")
			}
			if got := testutil.ToFloat64(e.reg.PluginAdmissionErr.WithLabelValues(c.reason)); got != 1 {
				t.Errorf("admission failures{reason=%s} = %v", c.reason, got)
			}
			// An unchanged refused folder is not counted again.
			e.cat.Scan(context.Background())
			if got := testutil.ToFloat64(e.reg.PluginAdmissionErr.WithLabelValues(c.reason)); got != 1 {
				t.Errorf("rescan counted again: %v", got)
			}
		})
	}
}

// writeRaw writes a folder without WriteFolder's help: any hash, no module.
func writeRaw(t *testing.T, dir, folder string, m plugins.Manifest, module []byte, hash string) {
	t.Helper()
	m.SHA256 = hash
	data, _ := json.Marshal(m)
	if err := os.MkdirAll(filepath.Join(dir, folder), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, folder, "plugin.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if module != nil {
		if err := os.WriteFile(filepath.Join(dir, folder, m.Module), module, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOperatorFolderOverridesBuiltin(t *testing.T) {
	guest := testkit.Fixture(t, "guest.wasm")
	m := guestManifest("fx")
	m.SHA256 = plugins.HashModule(guest)
	data, _ := json.Marshal(m)
	builtin := fstest.MapFS{"fx/plugin.json": {Data: data}, "fx/guest.wasm": {Data: guest}}
	e := newEnv(t, builtin, nil)
	e.cat.Scan(context.Background())
	if s := e.status(t, "fx"); !s.Admitted || s.Origin != plugins.OriginBuiltin {
		t.Fatalf("builtin status %+v", s)
	}
	m.Version = "2.0.0"
	if err := plugins.WriteFolder(e.dir, m, guest); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())
	if s := e.status(t, "fx"); !s.Admitted || s.Origin != plugins.OriginPlugins || s.Version != "2.0.0" {
		t.Fatalf("override status %+v", s)
	}
}

// TestWatch drops a plugin in, changes its bounds, breaks it and removes
// it, with no Scan call: the watcher must follow each step.
func TestWatch(t *testing.T) {
	e := newEnv(t, nil, nil)
	changes := make(chan struct{}, 16)
	e.cat.OnChange(func() { changes <- struct{}{} })
	if err := e.cat.Watch(context.Background()); err != nil {
		t.Fatal(err)
	}
	guest := testkit.Fixture(t, "guest.wasm")
	m := guestManifest("fx")

	// Dropped in: admitted.
	if err := plugins.WriteFolder(e.dir, m, guest); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changes)
	first := e.call("fx", "echo", `{}`)
	if !first.OK {
		t.Fatalf("after drop-in: %+v", first)
	}
	oldBounds, _ := json.Marshal(m.Bounds)

	// Bounds changed: re-admitted; a call echoing the old bounds is refused.
	m.Bounds.TimeoutMs = 50000
	if err := plugins.WriteFolder(e.dir, m, guest); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changes)
	stale := e.table.Call(context.Background(), wire.Call{V: 1, CallID: "c", Tool: "echo", DescriptorID: "fx", Args: json.RawMessage(`{}`), BoundsEcho: oldBounds})
	if stale.OK || stale.Refused != wire.BoundsMismatch {
		t.Errorf("old bounds after re-admission: %+v", stale)
	}
	if a := e.call("fx", "echo", `{}`); !a.OK {
		t.Errorf("new bounds: %+v", a)
	}

	// Broken in place: retired, not left serving the old version.
	if err := os.WriteFile(filepath.Join(e.dir, "fx", "guest.wasm"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changes)
	if s := e.status(t, "fx"); s.Admitted || s.Reason != plugins.ReasonHashMismatch {
		t.Errorf("broken plugin status %+v", s)
	}
	if a := e.call("fx", "echo", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("broken plugin still answers: %+v", a)
	}

	// Fixed, then removed: admitted again, then retired.
	if err := plugins.WriteFolder(e.dir, m, guest); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changes)
	if err := os.RemoveAll(filepath.Join(e.dir, "fx")); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changes)
	if len(e.cat.Statuses()) != 0 {
		t.Errorf("statuses after removal: %+v", e.cat.Statuses())
	}
	if a := e.call("fx", "echo", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("removed plugin still answers: %+v", a)
	}
}

func waitChange(t *testing.T, changes chan struct{}) {
	t.Helper()
	select {
	case <-changes:
	case <-time.After(60 * time.Second):
		t.Fatal("the watcher did not rescan")
	}
}

func TestManifestParsing(t *testing.T) {
	good := `{"id":"notes","version":"1.0.0","module":"notes.wasm","sha256":"` + strings.Repeat("a", 64) + `",
	 "tools":[{"name":"read_notes","description":"Read one note","inputSchema":{"type":"object"}}],
	 "bounds":{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":[],"roots":["notes"]}}`
	if _, err := plugins.ParseManifest([]byte(good)); err != nil {
		t.Fatalf("good manifest refused: %v", err)
	}
	bad := map[string]string{
		"module path":     strings.Replace(good, `"notes.wasm"`, `"../notes.wasm"`, 1),
		"module not wasm": strings.Replace(good, `"notes.wasm"`, `"notes.so"`, 1),
		"sha upper":       strings.Replace(good, strings.Repeat("a", 64), strings.Repeat("A", 64), 1),
		"sha short":       strings.Replace(good, strings.Repeat("a", 64), "abc", 1),
		"version empty":   strings.Replace(good, `"1.0.0"`, `""`, 1),
		"unknown key":     strings.Replace(good, `"version"`, `"grant":"all","version"`, 1),
		"bounds key":      strings.Replace(good, `"roots"`, `"unlimited":true,"roots"`, 1),
		"duplicate key":   strings.Replace(good, `"version"`, `"id":"x","version"`, 1),
		"tool key":        strings.Replace(good, `"description"`, `"run":"rm -rf","description"`, 1),
	}
	for name, m := range bad {
		if _, err := plugins.ParseManifest([]byte(m)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestManifestFileSaysWhere: a refused plugin.json names the file, the
// line and column when the strict walk found the place, the key path and
// what to do, and keeps its rule; a field check names the file alone.
func TestManifestFileSaysWhere(t *testing.T) {
	good := "{\"id\":\"notes\",\"version\":\"1.0.0\",\"module\":\"notes.wasm\",\"sha256\":\"" + strings.Repeat("a", 64) + "\",\n" +
		" \"tools\":[{\"name\":\"read_notes\",\"description\":\"Read one note\",\"inputSchema\":{\"type\":\"object\"}}],\n" +
		" \"bounds\":{\n  \"timeoutMs\":2000,\"memoryMiB\":64,\"maxOutputBytes\":1048576,\"maxRequests\":0,\"allowedHosts\":[],\"roots\":[\"notes\"]}}"
	for name, c := range map[string]struct {
		doc, want string
		rule      wire.Rule
	}{
		"typo in bounds": {strings.Replace(good, `"timeoutMs"`, `"timeoutMS"`, 1),
			`n/plugin.json:4:3: bounds: unknown key "timeoutMS"; did you mean "timeoutMs"?`, wire.UnknownField},
		"typo in a tool": {strings.Replace(good, `"description"`, `"descripton"`, 1),
			`n/plugin.json:2:32: tools[0]: unknown key "descripton"; did you mean "description"?`, wire.UnknownField},
		"missing comma": {strings.Replace(good, `"1.0.0",`, `"1.0.0"`, 1),
			`n/plugin.json:1:32: not valid JSON: expected "," or "}" after a member (a comma missing?)`, wire.Malformed},
		"wrong type": {strings.Replace(good, `"memoryMiB":64`, `"memoryMiB":"64"`, 1),
			`n/plugin.json:4:32: bounds.memoryMiB: want a whole number, got a string`, wire.Malformed},
		"field check": {strings.Replace(good, `"timeoutMs":2000`, `"timeoutMs":0`, 1),
			`n/plugin.json: bounds.timeoutMs must be 1 to`, ""},
	} {
		_, err := plugins.ParseManifestFile("n/plugin.json", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || (c.rule != "" && wire.RuleOf(err) != c.rule) {
			t.Errorf("%s: %v (%s), want %s… (%s)", name, err, wire.RuleOf(err), c.want, c.rule)
		}
	}
}

// TestHammerReadmitWhileCalling re-admits, breaks and restores a plugin
// again and again while callers hammer it. Every answer must be ok, or
// bounds-mismatch (the caller echoed bounds that were just replaced), or
// unattributed-call (the plugin was retired at that moment); never a
// panic, a hang or another rule. Run under -race it checks that retiring
// a program under its own calls is safe.
func TestHammerReadmitWhileCalling(t *testing.T) {
	if testing.Short() {
		t.Skip("hammer")
	}
	e := newEnv(t, nil, nil)
	guest := testkit.Fixture(t, "guest.wasm")
	m := guestManifest("fx")
	if err := plugins.WriteFolder(e.dir, m, guest); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())

	const callers, calls = 4, 40
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for ; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			switch n % 3 {
			case 0, 1: // new bounds: re-admitted
				m.Bounds.TimeoutMs = 50000 + n
				_ = plugins.WriteFolder(e.dir, m, guest)
			case 2: // broken: retired
				_ = os.WriteFile(filepath.Join(e.dir, "fx", "guest.wasm"), []byte("garbage"), 0o644)
			}
			e.cat.Scan(context.Background())
		}
	}()
	outcomes := make(chan wire.Answer, callers*calls)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				outcomes <- e.call("fx", "echo", `{"n":1}`)
			}
		}()
	}
	wg.Wait()
	close(stop)
	rounds := <-churned
	close(outcomes)
	counts := map[string]int{}
	for a := range outcomes {
		key := "ok"
		if !a.OK {
			key = string(a.Refused)
		}
		counts[key]++
		if a.OK && string(a.Observed) != `{"n":1}` {
			t.Errorf("wrong observation %s", a.Observed)
		}
	}
	for k := range counts {
		if k != "ok" && k != string(wire.BoundsMismatch) && k != string(wire.UnattributedCall) {
			t.Errorf("unexpected outcome %s (%d times)", k, counts[k])
		}
	}
	if counts["ok"] == 0 || rounds < 3 {
		t.Errorf("the hammer did not exercise both sides: %v over %d churn rounds", counts, rounds)
	}
	t.Logf("%d calls over %d re-admissions and retirements: %v", callers*calls, rounds, counts)
}
