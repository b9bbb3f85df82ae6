package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportGraph holds the module's floors (DESIGN: metrics and config at
// the bottom, then the executors and plugins, the broker on top, the
// binary above all): no package imports, directly or not, one of a floor
// it must not reach. Only what a package links is held, not its tests (an
// executors test may run a broker). airlock env's own path is
// envclient's TestEnvPathImports.
func TestImportGraph(t *testing.T) {
	const mod = "github.com/airlock/airlock/"
	graph := moduleDeps(t)
	for _, r := range []struct {
		name   string
		from   func(pkg string) bool // the packages held
		not    []string              // what they must not reach: packages and the folders under them
		except []string              // packages of not that they may reach (exactly these)
	}{
		{name: "metrics is below the broker", from: under(mod + "metrics"),
			not: []string{mod + "broker", mod + "plugins"}},
		// The outcome label's closed set is the refusal vocabulary, whose
		// one home is the wire package (a leaf: it links only the plugin
		// id rule and the nearest-name rule of its messages); nothing
		// else of the executors or of config.
		{name: "metrics is a lower floor", from: under(mod + "metrics"),
			not:    []string{mod + "executors", mod + "config"},
			except: []string{mod + "executors/wire", mod + "config/pluginid", mod + "config/suggest"}},
		{name: "config is a lower floor", from: under(mod + "config"),
			not: []string{mod + "executors", mod + "plugins", mod + "broker"}},
		{name: "the v1 client links no runtime", from: under(mod + "broker/v1client"),
			not: []string{"github.com/tetratelabs/wazero", mod + "plugins"}},
		{name: "sessions do not reach into the channel", from: under(mod + "broker/session"),
			not: []string{mod + "broker/channel"}},
		{name: "the executors are below the broker", from: under(mod + "executors"),
			not: []string{mod + "broker"}},
		// Registry code (oras-go) is the distribution commands' alone:
		// the broker, the catalog and the executors never link it.
		{name: "only the binary and plugins/distribute link oras", from: func(pkg string) bool {
			return !under(mod+"cmd")(pkg) && !under(mod+"plugins/distribute")(pkg)
		}, not: []string{"oras.land/oras-go/v2"}},
		{name: "nothing imports the binary", from: func(pkg string) bool { return !under(mod + "cmd")(pkg) },
			not: []string{mod + "cmd"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			held := 0
			for _, pkg := range slices.Sorted(maps.Keys(graph)) {
				if !r.from(pkg) {
					continue
				}
				held++
				for _, n := range r.not {
					hits := slices.DeleteFunc(slices.Clone(graph[pkg]), func(dep string) bool {
						return !under(n)(dep) || slices.Contains(r.except, dep)
					})
					if len(hits) > 0 {
						t.Errorf("%s imports %d package(s) of %s: %s", strings.TrimPrefix(pkg, mod), len(hits), n,
							strings.Join(hits[:min(3, len(hits))], ", "))
					}
				}
			}
			if held == 0 {
				t.Fatal("the rule holds no package: was one renamed?")
			}
		})
	}
}

// under reports whether a package is dir or under it.
func under(dir string) func(pkg string) bool {
	return func(pkg string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }
}

// moduleDeps maps each package of the module to what it imports, directly
// or not (go list's Deps: no test imports).
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "github.com/airlock/airlock/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		graph[p.ImportPath] = p.Deps
	}
	if len(graph) < 10 {
		t.Fatalf("go list listed %d packages", len(graph))
	}
	return graph
}
