package devkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/devkit"
)

// cacheDir is a compilation cache shared by the package's tests: each
// module is compiled once per run.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-devkit-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = filepath.Join(dir, "cache")
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// newProject writes a project for id into a fresh folder and returns it.
func newProject(t *testing.T, id string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	if _, err := devkit.New(id, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// oneLine fails unless err is of kind and reads as one line naming want.
func oneLine(t *testing.T, err, kind error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("no error, want %v naming %q", kind, want)
	case kind != nil && !errors.Is(err, kind):
		t.Fatalf("%v: not %v", err, kind)
	case strings.Contains(err.Error(), "\n"):
		t.Fatalf("not one line: %q", err)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("%q does not name %q", err, want)
	}
}

// TestNewWritesAProject: the project's files, a plugin.json the catalog
// parses, the SDK copied whole (no tests), and a go.mod that needs
// nothing from the network.
func TestNewWritesAProject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "greet")
	files, err := devkit.New("greet", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", "go.mod", "main.go", "main_test.go", "plugin.json", "sdk/go.mod", "sdk/sdk.go", "sdk/ABI.md"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil || !strings.Contains(strings.Join(files, " "), want) {
			t.Errorf("%s not written or not listed: %v", want, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "plugin.json"))
	m, err := plugins.ParseManifest(data)
	if err != nil {
		t.Fatalf("plugin.json: %v", err)
	}
	if m.ID != "greet" || m.Module != "greet.wasm" || len(m.Tools) != 1 || m.Tools[0].Name != "greet" {
		t.Errorf("manifest %+v", m)
	}
	for name, src := range plugins.SDKSource() {
		got, err := os.ReadFile(filepath.Join(dir, "sdk", name))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("sdk/%s is not the SDK's (%v)", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sdk", "sdk_test.go")); err == nil {
		t.Error("the SDK's tests were copied")
	}
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	for _, want := range []string{"require " + devkit.SDKModule + " v0.0.0", "replace " + devkit.SDKModule + " => ./sdk", "go " + devkit.GoVersion} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	if strings.Count(string(gomod), "require") != 1 {
		t.Errorf("go.mod requires more than the SDK:\n%s", gomod)
	}
}

// TestNewIntoEmptyFolder: an existing empty folder is fine; the tool of
// an id that cannot name a tool is prefixed.
func TestNewIntoEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	if _, err := devkit.New("1st", dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "plugin.json"))
	m, err := plugins.ParseManifest(data)
	if err != nil || m.Tools[0].Name != "tool_1st" || devkit.ToolName("1st") != "tool_1st" {
		t.Fatalf("%+v, %v", m.Tools, err)
	}
}

// TestNewRefusals: every refusal is a one-line usage error and writes
// nothing.
func TestNewRefusals(t *testing.T) {
	for _, name := range []string{"", "Greet", "-greet", "_greet", "a/b", "../x", "a b", "greet\n", "gr\u202eeet",
		strings.Repeat("a", 65), "a.b", "ü"} {
		dir := filepath.Join(t.TempDir(), "p")
		_, err := devkit.New(name, dir)
		oneLine(t, err, devkit.ErrUsage, "is not a plugin id")
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("%q: wrote %s", name, dir)
		}
	}
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o644)
	_, err := devkit.New("greet", full)
	oneLine(t, err, devkit.ErrUsage, "exists and is not empty")
	if ents, _ := os.ReadDir(full); len(ents) != 1 {
		t.Errorf("wrote into a non-empty folder: %v", ents)
	}
	file := filepath.Join(full, "keep")
	_, err = devkit.New("greet", file)
	oneLine(t, err, devkit.ErrUsage, "exists and is not a folder")
}

// TestBuildRefusesNonProjects: a missing folder, a folder without
// plugin.json.
func TestBuildRefusesNonProjects(t *testing.T) {
	ctx := context.Background()
	_, err := devkit.Build(ctx, filepath.Join(t.TempDir(), "absent"), devkit.BuildOptions{})
	oneLine(t, err, devkit.ErrUsage, "is not a folder")
	_, err = devkit.Build(ctx, t.TempDir(), devkit.BuildOptions{})
	oneLine(t, err, devkit.ErrUsage, "has no plugin.json")
	_, err = devkit.Run(ctx, t.TempDir(), "greet", json.RawMessage(`{}`), devkit.RunOptions{})
	oneLine(t, err, devkit.ErrUsage, "has no plugin.json")
}

// TestBuildChecksTheDescriptorFirst: a bad plugin.json is refused
// descriptor-invalid before anything compiles (main.go here would not),
// and nothing is written.
func TestBuildChecksTheDescriptorFirst(t *testing.T) {
	for name, c := range map[string]struct{ from, to, want string }{
		"bounds":     {`"timeoutMs": 1000`, `"timeoutMs": 0`, "bounds.timeoutMs must be 1 to"},
		"unknown":    {`"version"`, `"colour": "red", "version"`, "unknown"},
		"no sha256":  {`"sha256"`, `"sha"`, `plugin.json:5:3: unknown key "sha"; the keys here are id, version, module, sha256,`},
		"not json":   {`{`, `[`, `plugin.json:2:7: not valid JSON: expected "," or "]" after an item`},
		"comma":      {`"0.1.0",`, `"0.1.0"`, `plugin.json:4:3: not valid JSON: expected "," or "}" after a member (a comma missing?)`},
		"typo":       {`"timeoutMs"`, `"timeoutMS"`, `: bounds: unknown key "timeoutMS"; did you mean "timeoutMs"?`},
		"module":     {`"greet.wasm"`, `"../greet.wasm"`, "module must be a file name"},
		"tool name":  {`"name": "greet"`, `"name": "1greet"`, "tool name must match"},
		"no tools":   {`"tools": [`, `"tools": [], "x": [`, "unknown"},
		"schema":     {`"type": "object"`, `"type": 7`, ""},
		"id":         {`"id": "greet"`, `"id": "Greet"`, "descriptor id must match"},
		"dup member": {`"version": "0.1.0"`, `"version": "0.1.0", "version": "0.2.0"`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := newProject(t, "greet")
			edit(t, dir, "plugin.json", c.from, c.to)
			edit(t, dir, "main.go", "package main", "package main\n\nnot go")
			before, _ := os.ReadFile(filepath.Join(dir, "plugin.json"))
			_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{})
			if name == "schema" {
				// A schema that compiles badly is found by the executors,
				// after compiling; main.go does not compile here.
				if err == nil || errors.Is(err, devkit.ErrUsage) {
					t.Fatalf("got %v", err)
				}
				return
			}
			refusedUnwritten(t, err, plugins.ReasonDescriptorInvalid, c.want, dir, before)
		})
	}
}

// refusedUnwritten fails unless err is a one-line refusal for reason
// naming want, and the project in dir kept its plugin.json (before) and
// got no module.
func refusedUnwritten(t *testing.T, err error, reason, want, dir string, before []byte) {
	t.Helper()
	var r *devkit.RefusedError
	oneLine(t, err, devkit.ErrRefused, want)
	if !errors.As(err, &r) || r.Reason != reason {
		t.Fatalf("reason: %v, want %s", err, reason)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "plugin.json")); !bytes.Equal(before, after) {
		t.Error("plugin.json changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "greet.wasm")); err == nil {
		t.Error("a module was written")
	}
}

func edit(t *testing.T, dir, file, from, to string) {
	t.Helper()
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte(from)) {
		t.Fatalf("%s has no %q (%v)", file, from, err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(from), []byte(to), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeTinyGo puts a tinygo on PATH that records its arguments and writes
// module where -o says.
func fakeTinyGo(t *testing.T, module string) (env []string, argsFile string) {
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" > \"$FAKE_ARGS\"\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\ncp \"$FAKE_MODULE\" \"$out\"\n"
	if err := os.WriteFile(filepath.Join(dir, "tinygo"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
	t.Setenv("PATH", path)
	return []string{"PATH=" + path, "FAKE_ARGS=" + argsFile, "FAKE_MODULE=" + module}, argsFile
}

// TestBuildWithTinyGo: --tinygo runs tinygo with TinyGoArgs in the
// project, and its module goes through the same checks.
func TestBuildWithTinyGo(t *testing.T) {
	env, argsFile := fakeTinyGo(t, testkit.FixturePath("silent.wasm"))
	dir := newProject(t, "greet")
	b, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{TinyGo: true, Env: env, CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(argsFile)
	want := strings.Join(devkit.TinyGoArgs(devkit.Reactor, "X"), " ")
	if before, after, _ := strings.Cut(want, "X"); !strings.HasPrefix(string(got), before) || !strings.HasSuffix(strings.TrimSpace(string(got)), after) {
		t.Errorf("tinygo %s, want tinygo %s", got, want)
	}
	module, _ := os.ReadFile(filepath.Join(dir, "greet.wasm"))
	if b.Compiler != "tinygo" || b.Manifest.SHA256 != plugins.HashModule(module) || !bytes.Equal(module, testkit.Fixture(t, "silent.wasm")) {
		t.Errorf("built %+v", b)
	}
	if _, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{TinyGo: true, Style: devkit.Command, Env: env}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(argsFile); strings.Contains(string(got), "c-shared") {
		t.Errorf("a command build asked for a reactor: %s", got)
	}
}

// TestBuildRefusesWhatTheCatalogRefuses: a module that imports outside
// the host modules is refused imports-refused, and neither it nor its
// hash is written.
func TestBuildRefusesWhatTheCatalogRefuses(t *testing.T) {
	env, _ := fakeTinyGo(t, testkit.FixturePath("imports-env.wasm"))
	dir := newProject(t, "greet")
	before, _ := os.ReadFile(filepath.Join(dir, "plugin.json"))
	_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{TinyGo: true, Env: env})
	refusedUnwritten(t, err, executors.ReasonImportsRefused, "imports-refused: imports env.", dir, before)
	if ents, _ := os.ReadDir(dir); len(ents) != 6 {
		t.Errorf("left files behind: %v", ents)
	}
}

// TestBuildWithoutCompiler: a compiler that is not on PATH is a failure
// (exit 1), not a usage error.
func TestBuildWithoutCompiler(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := newProject(t, "greet")
	for _, tinygo := range []bool{false, true} {
		_, err := devkit.Build(context.Background(), dir, devkit.BuildOptions{TinyGo: tinygo})
		oneLine(t, err, nil, "is not on PATH")
		if errors.Is(err, devkit.ErrUsage) || errors.Is(err, devkit.ErrRefused) {
			t.Errorf("%v: a usage error or refusal", err)
		}
	}
}

// TestBuildAndRun builds a new project with the Go toolchain and calls
// it: an answer, a tool error, an args refusal; then a compile error
// leaves the last good build in place. Only the reactor style: compiling
// the module under -race takes minutes, and the command build differs
// only by its arguments (TestGoArgs); cmd/airlock's
// TestRunRefusesUnmappedRoots runs a command module.
func TestBuildAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles Go to wasip1")
	}
	ctx := context.Background()
	dir := newProject(t, "greet")
	// The answers are the subject, not the time: the template's 1000 ms
	// bound is a short wait for a loaded machine running the module under
	// a -race host.
	edit(t, dir, "plugin.json", `"timeoutMs": 1000`, `"timeoutMs": 120000`)
	cache := cacheDir
	var out bytes.Buffer
	for _, style := range []devkit.Style{devkit.Reactor} {
		b, err := devkit.Build(ctx, dir, devkit.BuildOptions{Style: style, Env: os.Environ(), Output: &out, CacheDir: cache})
		if err != nil {
			t.Fatalf("%s: %v\n%s", style, err, out.String())
		}
		data, _ := os.ReadFile(filepath.Join(dir, "plugin.json"))
		module, _ := os.ReadFile(b.Module)
		if m, err := plugins.ParseManifest(data); err != nil || m.SHA256 != plugins.HashModule(module) || b.Style != style {
			t.Fatalf("%s: %+v, %v", style, b, err)
		}
		o := devkit.RunOptions{Runtime: executors.Config{CacheDir: cache}}
		for args, want := range map[string]string{
			`{"name":"Ada"}`: `{"v":1,"callId":"run_1","ok":true,"observed":{"greeting":"Hello, Ada!"},"budget":{"requestsUsed":0,"requestsLimit":0}}`,
			`{"name":" "}`:   `{"v":1,"callId":"run_1","ok":false,"refused":"exec-threw","why":"tool error: name is blank","budget":{"requestsUsed":0,"requestsLimit":0}}`,
			`{}`:             `{"v":1,"callId":"run_1","ok":false,"refused":"args-invalid","why":"/name: required","budget":{"requestsUsed":0,"requestsLimit":0}}`,
		} {
			a, err := devkit.Run(ctx, dir, "greet", json.RawMessage(args), o)
			got, _ := json.Marshal(a)
			if err != nil || string(got) != want {
				t.Errorf("%s %s: %s, %v\nwant %s", style, args, got, err, want)
			}
		}
		// The observation is held to the outputSchema, as a broker holds it.
		edit(t, dir, "plugin.json", `"greeting": {"type": "string"}`, `"greeting": {"type": "integer"}`)
		a, err := devkit.Run(ctx, dir, "greet", json.RawMessage(`{"name":"Ada"}`), o)
		if err != nil || a.Refused != wire.OutputInvalid || a.Why != "/greeting: type" {
			t.Errorf("%s: an observation the outputSchema refuses: %+v, %v", style, a, err)
		}
		edit(t, dir, "plugin.json", `"greeting": {"type": "integer"}`, `"greeting": {"type": "string"}`)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "plugin.json"))
	edit(t, dir, "main.go", "func main()", "func main() { undefined() }\nfunc old()")
	out.Reset()
	_, err := devkit.Build(ctx, dir, devkit.BuildOptions{Env: os.Environ(), Output: &out})
	oneLine(t, err, nil, "go build failed")
	if errors.Is(err, devkit.ErrRefused) || !strings.Contains(out.String(), "undefined") {
		t.Errorf("%v; compiler said %s", err, out.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "plugin.json")); !bytes.Equal(before, after) {
		t.Error("a failed build changed plugin.json")
	}
}

// TestRunRefusals: a project that would not be admitted is refused with
// the catalog's reason and what to do.
func TestRunRefusals(t *testing.T) {
	ctx := context.Background()
	dir := newProject(t, "greet")
	_, err := devkit.Run(ctx, dir, "greet", json.RawMessage(`{}`), devkit.RunOptions{})
	oneLine(t, err, devkit.ErrRefused, "module-missing: module greet.wasm")
	if !strings.Contains(err.Error(), "airlock build "+dir) {
		t.Errorf("no hint: %v", err)
	}
	env, _ := fakeTinyGo(t, testkit.FixturePath("silent.wasm"))
	cache := cacheDir
	if _, err := devkit.Build(ctx, dir, devkit.BuildOptions{TinyGo: true, Env: env, CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, "greet.wasm"), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0})
	f.Close()
	_, err = devkit.Run(ctx, dir, "greet", json.RawMessage(`{}`), devkit.RunOptions{Runtime: executors.Config{CacheDir: cache}})
	oneLine(t, err, devkit.ErrRefused, "hash-mismatch: the module's SHA-256 does not match plugin.json (airlock build")
	edit(t, dir, "plugin.json", `"roots": []`, `"roots": ["notes"]`)
	if _, err := devkit.Build(ctx, dir, devkit.BuildOptions{TinyGo: true, Env: env, CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	_, err = devkit.Run(ctx, dir, "greet", json.RawMessage(`{}`), devkit.RunOptions{Runtime: executors.Config{CacheDir: cache}})
	oneLine(t, err, devkit.ErrRefused, `root-unmapped: root "notes" is not mapped by the operator (map it with --root NAME=DIR)`)
	_, err = devkit.Run(ctx, dir, "bad\x00tool", json.RawMessage(`{}`), devkit.RunOptions{Runtime: executors.Config{CacheDir: cache, Roots: map[string]string{"notes": t.TempDir()}}})
	oneLine(t, err, devkit.ErrUsage, "the call is not valid")
	edit(t, dir, "plugin.json", `"timeoutMs"`, `"timeoutMS"`)
	_, err = devkit.Run(ctx, dir, "greet", json.RawMessage(`{}`), devkit.RunOptions{Runtime: executors.Config{CacheDir: cache}})
	oneLine(t, err, devkit.ErrRefused, filepath.Join(dir, "plugin.json")+`:`)
	oneLine(t, err, devkit.ErrRefused, `: bounds: unknown key "timeoutMS"; did you mean "timeoutMs"?`)
}

// TestGoArgs: reproducible builds; a reactor is c-shared, a command not.
func TestGoArgs(t *testing.T) {
	for style, want := range map[devkit.Style]string{
		devkit.Reactor: "build -trimpath -buildvcs=false -buildmode=c-shared -o out .",
		devkit.Command: "build -trimpath -buildvcs=false -o out .",
		"":             "build -trimpath -buildvcs=false -buildmode=c-shared -o out .",
	} {
		if got := strings.Join(devkit.GoArgs(style, "out"), " "); got != want {
			t.Errorf("%q: go %s, want go %s", style, got, want)
		}
	}
	for style, want := range map[devkit.Style]string{
		devkit.Reactor: "build -target=wasip1 -no-debug -buildmode=c-shared -o out .",
		devkit.Command: "build -target=wasip1 -no-debug -o out .",
	} {
		if got := strings.Join(devkit.TinyGoArgs(style, "out"), " "); got != want {
			t.Errorf("%q: tinygo %s, want tinygo %s", style, got, want)
		}
	}
}

// TestInstallMakesThePluginsFolder: --install into a folder that does not
// exist yet makes it (and its parents) and drops the plugin in.
func TestInstallMakesThePluginsFolder(t *testing.T) {
	dir := t.TempDir()
	module := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(module, []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "new", "plugins")
	b := devkit.Built{Manifest: plugins.Manifest{ID: "fresh", Module: "m.wasm"}, Module: module}
	if err := devkit.Install(b, folder); err != nil {
		t.Fatalf("install into a missing folder: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(folder, "fresh", "m.wasm"))
	if err != nil || string(got) != "\x00asm" {
		t.Fatalf("installed module: %q, %v", got, err)
	}
}
