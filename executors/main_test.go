package executors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// sharedCache is one compilation cache directory for the whole test
// binary, so each fixture is compiled once however many Runtimes the
// tests make.
var sharedCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-executors-test-cache-")
	if err != nil {
		panic(err)
	}
	sharedCache = dir
	if err := warmCache(dir); err != nil {
		// Only slower: each fixture is then compiled by the first test
		// that loads it, under the race detector when it is on.
		fmt.Fprintln(os.Stderr, "executors tests: compilation cache not warmed:", err)
	}
	goleak.VerifyTestMain(afterRun{m}, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// warmCache compiles the fixtures most tests load into dir with
// internal/cachewarm, built without -race (see its doc comment): each
// first load of a fixture then takes half a second instead of twenty under
// the race detector, minutes in all on a loaded 2-core machine.
//
// wazero files its cache under its own version, which it reads from the
// build info; a test binary's build info has no dependency versions, so
// this one files under wazero's default, and cachewarm is told the same
// version with -X.
func warmCache(dir string) error {
	bin := filepath.Join(dir, "cachewarm")
	ldflags := "-X github.com/tetratelabs/wazero/internal/version.version=" + wazeroVersion()
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./internal/cachewarm").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	defer os.Remove(bin)
	args := []string{dir}
	for _, name := range []string{"guest.wasm", "guest-reactor.wasm", "silent.wasm", "configured.wasm", "configured-reactor.wasm"} {
		args = append(args, testkit.FixturePath(name))
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("run: %v\n%s", err, out)
	}
	return nil
}

// wazeroVersion is the version wazero reads from this binary's build
// info (github.com/tetratelabs/wazero/internal/version): the wazero
// dependency's, else "dev".
func wazeroVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if strings.Contains(dep.Path, "github.com/tetratelabs/wazero") && dep.Version != "" && dep.Version != "(devel)" {
				return dep.Version
			}
		}
	}
	return "dev"
}

// afterRun closes what tests share across the process (the fuzz target)
// before goleak looks for leftover goroutines.
type afterRun struct{ m *testing.M }

func (a afterRun) Run() int {
	code := a.m.Run()
	if fuzzRuntime != nil {
		if err := fuzzRuntime.Close(context.Background()); err != nil {
			code = 1
		}
	}
	return code
}

// newRuntime makes a Runtime on the shared cache and closes it with the
// test.
func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = sharedCache
	}
	r, err := NewRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

// guestTools are the fixture's tools, each with an open schema.
var guestTools = []string{"echo", "loop", "membomb", "trap", "exit3", "bigout", "notobject",
	"fail", "fetch", "fetchn", "readfile", "writefile", "sleep", "log", "stderr", "counter",
	"nojson", "twojson", "toolerror", "rawexit"}

func defaultBounds() wire.Bounds {
	return wire.Bounds{TimeoutMs: 5000, MemoryMiB: 64, MaxOutputBytes: 1 << 20,
		AllowedHosts: []string{}, Roots: []string{}}
}

func guestDescriptor(id string, b wire.Bounds) wire.Descriptor {
	d := wire.Descriptor{DescriptorID: id, Bounds: b}
	for _, name := range guestTools {
		d.Tools = append(d.Tools, wire.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return d
}

// load admits module under d and closes the program with the test.
func load(t testing.TB, r *Runtime, d wire.Descriptor, module []byte) *Program {
	t.Helper()
	p, err := r.Load(context.Background(), d, module)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// call runs tool with args on p, echoing p's bounds, and checks that the
// answer is a valid envelope.
func call(t testing.TB, p *Program, tool string, args string) wire.Answer {
	t.Helper()
	a := p.Call(context.Background(), wire.Call{V: 1, CallID: "call_1", Tool: tool,
		DescriptorID: p.d.DescriptorID, Args: json.RawMessage(args), BoundsEcho: p.d.Bounds.Canonical()})
	mustParse(t, a)
	return a
}

func mustParse(t testing.TB, a wire.Answer) {
	t.Helper()
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("marshal answer: %v", err)
	}
	if _, err := wire.ParseAnswer(data); err != nil {
		t.Fatalf("answer %s does not parse: %v", data, err)
	}
}

func wantRule(t testing.TB, a wire.Answer, r wire.Rule) {
	t.Helper()
	if a.OK || a.Refused != r {
		data, _ := json.Marshal(a)
		t.Fatalf("want refusal %s, got %s", r, data)
	}
}

func wantOK(t testing.TB, a wire.Answer) map[string]any {
	t.Helper()
	if !a.OK {
		data, _ := json.Marshal(a)
		t.Fatalf("want ok, got %s", data)
	}
	var m map[string]any
	if err := json.Unmarshal(a.Observed, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// styles are the two builds of the guest fixture; most behaviour tests
// run against both.
var styles = []struct{ name, file string }{
	{"command", "guest.wasm"},
	{"reactor", "guest-reactor.wasm"},
}
