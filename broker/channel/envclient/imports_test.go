package envclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEnvPathImports asserts the import graph of `airlock env`'s path:
// the environment builds none of the broker's server (routing, pairings,
// the /channel server, Prometheus). cmd/airlock as a whole imports the
// broker for `serve`, so the packages env's code calls are checked:
// envclient and link may reach only the standard library,
// coder/websocket, executors/wire (with the plugin id rule it checks,
// config/pluginid, and the nearest-name rule of its messages,
// config/suggest with its edit distance) and the frame plumbing
// (broker/internal/frame);
// plugins (plugins.Open) reaches no broker package. It does reach
// client_golang, through the metrics its catalog keeps. The floors of the
// whole module are TestImportGraph's (package broker).
func TestEnvPathImports(t *testing.T) {
	const mod = "github.com/airlock/airlock/"
	only := func(allowed ...string) func(string) bool {
		return func(dep string) bool {
			for _, a := range allowed {
				if dep == a || strings.HasPrefix(dep, a+"/") {
					return true
				}
			}
			return false
		}
	}
	wireOnly := only("github.com/coder/websocket", mod+"executors/wire", mod+"config/pluginid",
		mod+"config/suggest", "github.com/agnivade/levenshtein",
		mod+"broker/internal/frame", mod+"broker/channel/link")
	for pkg, ok := range map[string]func(string) bool{
		mod + "broker/channel/link":      wireOnly,
		mod + "broker/channel/envclient": wireOnly,
		mod + "plugins": func(dep string) bool {
			return !strings.HasPrefix(dep, mod+"broker")
		},
	} {
		for _, dep := range deps(t, pkg) {
			if dep != pkg && !ok(dep) {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}

// deps lists what pkg imports, directly or not, outside the standard
// library.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	list := strings.Fields(string(out))
	if len(list) == 0 {
		t.Fatalf("go list %s listed nothing", pkg)
	}
	return list
}
