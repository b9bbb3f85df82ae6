package plugins_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/plugins"
)

// A background catalog lists a plugin before its module compiles; a call
// sent at once waits for it, and a plugin whose module compilation
// refuses is then refused by name, counted, withdrawn from the table,
// and the listeners run again.
func TestBackgroundCompilation(t *testing.T) {
	e := newEnvWith(t, nil, nil, true)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(plugins.WriteFolder(e.dir, guestManifest("fx"), testkit.Fixture(t, "guest.wasm")))
	bad := guestManifest("bad")
	bad.Module = "imports-env.wasm"
	must(plugins.WriteFolder(e.dir, bad, testkit.Fixture(t, "imports-env.wasm")))
	var changes atomic.Int32
	e.cat.OnChange(func() { changes.Add(1) })

	e.cat.Scan(context.Background())
	if _, ok := e.table.Get("fx"); !ok || !e.status(t, "fx").Admitted {
		t.Fatalf("fx not listed after the scan: %+v", e.cat.Statuses())
	}
	if a := e.call("fx", "echo", `{"a":1}`); !a.OK || string(a.Observed) != `{"a":1}` {
		t.Fatalf("call sent before compilation ended: %+v", a)
	}

	must(e.cat.WaitCompiled(context.Background()))
	if s := e.status(t, "bad"); s.Admitted || s.Reason != executors.ReasonImportsRefused || s.Detail == "" || s.Signer != nil {
		t.Fatalf("bad: %+v", s)
	}
	if _, ok := e.table.Get("bad"); ok {
		t.Error("the refused plugin is still in the table")
	}
	if got := testutil.ToFloat64(e.reg.PluginAdmissionErr.WithLabelValues(executors.ReasonImportsRefused)); got != 1 {
		t.Errorf("admission failures{reason=imports-refused} = %v", got)
	}
	if got := testutil.ToFloat64(e.reg.PluginsAdmitted); got != 1 {
		t.Errorf("plugins_admitted = %v", got)
	}
	if n := changes.Load(); n != 2 {
		t.Errorf("listeners ran %d times, want 2 (the scan, the refusal)", n)
	}
	// An unchanged refused folder is not considered again.
	e.cat.Scan(context.Background())
	must(e.cat.WaitCompiled(context.Background()))
	if got := testutil.ToFloat64(e.reg.PluginAdmissionErr.WithLabelValues(executors.ReasonImportsRefused)); got != 1 || changes.Load() != 2 {
		t.Errorf("rescan: failures %v, changes %d", got, changes.Load())
	}
}

// Closing a background catalog while its modules compile stops them and
// leaves nothing running (TestMain's goleak).
func TestBackgroundCloseWhileCompiling(t *testing.T) {
	e := newEnvWith(t, nil, nil, true)
	for _, id := range []string{"a", "b", "c"} {
		if err := plugins.WriteFolder(e.dir, guestManifest(id), testkit.Fixture(t, "guest.wasm")); err != nil {
			t.Fatal(err)
		}
	}
	e.cat.Scan(context.Background())
	if err := e.cat.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.WaitCompiled(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Only the first scan compiles in the background: a plugin added or
// changed while the broker runs is listed, or replaces its old version,
// once its module is ready, so a call made at once never waits for a
// compilation, and a module compilation refuses is never listed.
func TestLaterScansCompileFirst(t *testing.T) {
	e := newEnvWith(t, nil, nil, true)
	if err := plugins.WriteFolder(e.dir, guestManifest("fx"), testkit.Fixture(t, "guest.wasm")); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())
	if err := e.cat.WaitCompiled(context.Background()); err != nil {
		t.Fatal(err)
	}
	late := guestManifest("late")
	if err := plugins.WriteFolder(e.dir, late, testkit.Fixture(t, "guest.wasm")); err != nil {
		t.Fatal(err)
	}
	bad := guestManifest("bad")
	bad.Module = "imports-env.wasm"
	if err := plugins.WriteFolder(e.dir, bad, testkit.Fixture(t, "imports-env.wasm")); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())
	// No wait: what the scan listed is what it compiled.
	if s := e.status(t, "bad"); s.Admitted || s.Reason != executors.ReasonImportsRefused {
		t.Fatalf("a module compilation refuses was listed by a later scan: %+v", s)
	}
	if _, ok := e.table.Get("bad"); ok {
		t.Error("the refused plugin is in the table")
	}
	prog, ok := e.table.Get("late")
	if !ok {
		t.Fatal("late not listed")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := prog.Ready(done); err != nil {
		t.Fatalf("a plugin a later scan listed was not compiled yet: %v", err)
	}
}
