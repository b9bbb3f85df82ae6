// The tests are an external package because plugins, which they use,
// imports bundled (plugins.Open admits the bundled plugins).
package bundled_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/bundled"
	"github.com/airlock/airlock/plugins/bundled/internal/modbuild"
)

// sharedCache is one compilation cache for the whole test binary: each
// bundled module is compiled once (tens of seconds under -race on a busy
// machine), not once per test.
var sharedCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-bundled-test-cache-")
	if err != nil {
		panic(err)
	}
	sharedCache = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// shipped reads a bundled plugin exactly as the binary embeds it.
func shipped(t *testing.T, name string) (plugins.Manifest, []byte) {
	t.Helper()
	data, err := fs.ReadFile(bundled.Plugins(), name+"/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := plugins.ParseManifest(data)
	if err != nil {
		t.Fatalf("%s/plugin.json: %v", name, err)
	}
	module, err := fs.ReadFile(bundled.Plugins(), name+"/"+m.Module)
	if err != nil {
		t.Fatal(err)
	}
	return m, module
}

func TestManifestsMatchModules(t *testing.T) {
	for _, name := range modbuild.Plugins {
		m, module := shipped(t, name)
		if m.ID != name || m.Module != name+".wasm" || m.Version != "1.0.0" {
			t.Fatalf("%s: manifest %+v", name, m)
		}
		if got := modbuild.SHA256(module); got != m.SHA256 || got != plugins.HashModule(module) {
			t.Fatalf("%s: plugin.json sha256 %s, module hashes to %s (run go generate ./plugins/bundled)", name, m.SHA256, got)
		}
		for _, tool := range m.Tools {
			var schema map[string]any
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["additionalProperties"] != false {
				t.Fatalf("%s.%s: inputSchema must set additionalProperties false", name, tool.Name)
			}
		}
	}
	notes, _ := shipped(t, "notes")
	web, _ := shipped(t, "web")
	wantBounds := map[string]wire.Bounds{
		"notes": {TimeoutMs: 2000, MemoryMiB: 64, MaxOutputBytes: 1048576, MaxRequests: 0, AllowedHosts: []string{}, Roots: []string{"notes"}},
		"web":   {TimeoutMs: 10000, MemoryMiB: 64, MaxOutputBytes: 262144, MaxRequests: 4, AllowedHosts: []string{}, Roots: []string{}},
	}
	for name, m := range map[string]plugins.Manifest{"notes": notes, "web": web} {
		if !reflect.DeepEqual(m.Bounds, wantBounds[name]) {
			t.Fatalf("%s bounds %+v", name, m.Bounds)
		}
	}
}

// notesTree lays out a notes root for the tests and returns its path and
// the regular files in it, sorted.
func notesTree(t *testing.T) (string, []string) {
	base := t.TempDir()
	root := filepath.Join(base, "notes")
	files := map[string]string{
		"welcome.md":             "# Welcome\nThe Needle is here.\nnothing\n",
		"b/deep/nested.md":       "deep NEEDLE line\n",
		"b/other.txt":            "no match\n",
		"many.md":                strings.Repeat("needle again\n", 250),
		"bytes.bin":              "\xff\xfeneedle\x00",
		"a file with spaces.txt": "spaced needle\n",
	}
	for p, text := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "secret.txt"), []byte("needle outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret.txt", filepath.Join(root, "escape.md")); err != nil {
		t.Fatal(err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return root, paths
}

type runner struct {
	t *testing.T
	p *executors.Program
}

func (r runner) call(tool, args string) wire.Answer {
	r.t.Helper()
	d := r.p.Descriptor()
	a := r.p.Call(context.Background(), wire.Call{V: 1, CallID: "call_1", Tool: tool,
		DescriptorID: d.DescriptorID, Args: json.RawMessage(args), BoundsEcho: d.Bounds.Canonical()})
	data, err := json.Marshal(a)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := wire.ParseAnswer(data); err != nil {
		r.t.Fatalf("answer %s: %v", data, err)
	}
	return a
}

func (r runner) ok(tool, args string, v any) {
	r.t.Helper()
	a := r.call(tool, args)
	if !a.OK {
		r.t.Fatalf("%s %s refused %s", tool, args, a.Refused)
	}
	if err := json.Unmarshal(a.Observed, v); err != nil {
		r.t.Fatal(err)
	}
}

func (r runner) refused(tool, args string, rule wire.Rule) {
	r.t.Helper()
	if a := r.call(tool, args); a.OK || a.Refused != rule {
		r.t.Fatalf("%s %s: %+v, want %s", tool, args, a, rule)
	}
}

func (r runner) refusedWhy(tool, args string, rule wire.Rule, why string) {
	r.t.Helper()
	if a := r.call(tool, args); a.OK || a.Refused != rule || a.Why != why {
		r.t.Fatalf("%s %s: %+v, want %s %q", tool, args, a, rule, why)
	}
}

func newRuntime(t *testing.T, notesRoot string) *executors.Runtime {
	rt, err := executors.NewRuntime(context.Background(), executors.Config{
		CacheDir: sharedCache, Roots: map[string]string{"notes": notesRoot}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func load(t *testing.T, rt *executors.Runtime, d wire.Descriptor, module []byte) runner {
	p, err := rt.Load(context.Background(), d, module)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return runner{t, p}
}

func TestNotesTool(t *testing.T) {
	root, files := notesTree(t)
	m, module := shipped(t, "notes")
	n := load(t, newRuntime(t, root), m.Descriptor(), module)

	var read struct{ Path, Text string }
	n.ok("read_notes", `{"path":"welcome.md"}`, &read)
	if read.Path != "welcome.md" || read.Text != "# Welcome\nThe Needle is here.\nnothing\n" {
		t.Fatalf("read_notes: %+v", read)
	}
	n.ok("read_notes", `{"path":"b/deep/nested.md"}`, &read)
	for _, bad := range []string{"/welcome.md", "../secret.txt", "b/../../secret.txt", "escape.md", "missing.md", "b"} {
		n.refused("read_notes", fmt.Sprintf(`{"path":%q}`, bad), wire.ExecThrew)
	}
	// What the caller can act on says so; the rest stays generic.
	for bad, why := range map[string]string{
		"/welcome.md":   "tool error: path must be relative to the notes root, without ..",
		"../secret.txt": "tool error: path must be relative to the notes root, without ..",
		"missing.md":    `tool error: no note "missing.md"`,
		"b":             `tool error: "b" is a folder, not a note (list_notes lists the notes)`,
	} {
		n.refusedWhy("read_notes", fmt.Sprintf(`{"path":%q}`, bad), wire.ExecThrew, why)
	}
	n.refusedWhy("read_notes", `{}`, wire.ArgsInvalid, "/path: required")
	n.refusedWhy("read_notes", `{"path":"welcome.md","x":1}`, wire.ArgsInvalid, `unexpected key "x"; allowed: path`)

	var list struct{ Paths []string }
	n.ok("list_notes", `{}`, &list)
	if !slices.Equal(list.Paths, files) {
		t.Fatalf("list_notes = %q, want %q", list.Paths, files)
	}

	var search struct {
		Matches []struct {
			Path string
			Line int
			Text string
		}
	}
	n.ok("search_notes", `{"query":"NeEdLe"}`, &search)
	if len(search.Matches) != 200 {
		t.Fatalf("search_notes found %d matches, want the bound 200", len(search.Matches))
	}
	first := search.Matches[0]
	if first.Path != "a file with spaces.txt" || first.Line != 1 || first.Text != "spaced needle" {
		t.Fatalf("first match %+v", first)
	}
	for _, m := range search.Matches {
		if strings.Contains(m.Text, "outside") {
			t.Fatal("search read outside the root")
		}
	}
	n.ok("search_notes", `{"query":"DEEP needle"}`, &search)
	if len(search.Matches) != 1 || search.Matches[0].Path != "b/deep/nested.md" {
		t.Fatalf("search_notes deep: %+v", search.Matches)
	}
	n.refusedWhy("search_notes", `{"query":""}`, wire.ArgsInvalid, "/query: minLength")
	n.refusedWhy("search_notes", `{"query":" \t "}`, wire.ExecThrew, "tool error: empty query: give some text to search for")
}

// webServer serves /ok, /big (100 KiB), /cut (a two-byte character across
// the 64 KiB mark) and 404 elsewhere.
func webServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "hello")
		case "/big":
			io.WriteString(w, strings.Repeat("x", 100<<10))
		case "/cut":
			io.WriteString(w, strings.Repeat("a", 64<<10-1)+"é and more")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func webDescriptor(t *testing.T, srv *httptest.Server) (wire.Descriptor, []byte) {
	m, module := shipped(t, "web")
	d := m.Descriptor()
	d.Bounds.AllowedHosts = []string{strings.TrimPrefix(srv.URL, "http://")}
	return d, module
}

func TestWebTool(t *testing.T) {
	srv := webServer(t)
	d, module := webDescriptor(t, srv)
	w := load(t, newRuntime(t, t.TempDir()), d, module)
	var got struct {
		Status      int
		ContentType string
		Body        string
	}
	w.ok("fetch_url", fmt.Sprintf(`{"url":%q}`, srv.URL+"/ok"), &got)
	if got.Status != 200 || got.ContentType != "text/plain; charset=utf-8" || got.Body != "hello" {
		t.Fatalf("fetch_url /ok: %+v", got)
	}
	w.ok("fetch_url", fmt.Sprintf(`{"url":%q}`, srv.URL+"/big"), &got)
	if len(got.Body) != 64<<10 {
		t.Fatalf("body of %d bytes, want 64 KiB", len(got.Body))
	}
	w.ok("fetch_url", fmt.Sprintf(`{"url":%q}`, srv.URL+"/cut"), &got)
	if got.Body != strings.Repeat("a", 64<<10-1) {
		t.Fatalf("cut body ends %q", got.Body[len(got.Body)-4:])
	}
	w.ok("fetch_url", fmt.Sprintf(`{"url":%q}`, srv.URL+"/missing"), &got)
	if got.Status != 404 {
		t.Fatalf("status %d", got.Status)
	}
	w.refused("fetch_url", `{"url":"http://example.com/"}`, wire.HostNotAllowed)
	w.refused("fetch_url", `{"url":5}`, wire.ArgsInvalid)
}

// TestFreshBuildsMatchCommitted rebuilds every bundled module from its
// source with the local toolchain and fails on any difference from the
// committed module: what `go run ./cmd/airlock demo` embeds is exactly
// what the source builds to. After changing a bundled tool's source, run
// `go generate ./plugins/bundled` and commit the modules it writes.
func TestFreshBuildsMatchCommitted(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot rebuild the bundled modules")
	}
	dir := t.TempDir()
	for _, name := range modbuild.Plugins {
		out := filepath.Join(dir, name+".wasm")
		if err := modbuild.Build(name, out); err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		_, committed := shipped(t, name)
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s: a fresh build (%d bytes, sha256 %s) differs from the committed module (%d bytes, sha256 %s); run go generate ./plugins/bundled",
				name, len(fresh), modbuild.SHA256(fresh), len(committed), modbuild.SHA256(committed))
		}
	}
}
