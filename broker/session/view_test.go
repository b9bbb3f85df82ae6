package session

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/jsclient"
)

// importRe finds the relative module specifiers of an ES module.
var importRe = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^"']*?(?:from\s*)?["'](\./[^"']+)["']`)

// TestClientModulesAreViewsImports holds ClientModules equal to the
// import graph of the page: the client modules its own scripts (app.js,
// tools.js) import from ./client/, and what those import in dist. So a
// module the page or the client starts to import is served (else the page
// breaks) and nothing it does not import is.
func TestClientModulesAreViewsImports(t *testing.T) {
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		src, err := fs.ReadFile(jsclient.Dist, "dist/"+name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, m := range importRe.FindAllStringSubmatch(string(src), -1) {
			walk(m[1][len("./"):])
		}
	}
	roots := 0
	for name := range pageFiles {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		src, err := fs.ReadFile(viewFiles, "view/"+name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range importRe.FindAllStringSubmatch(string(src), -1) {
			if mod, ok := strings.CutPrefix(m[1], "./client/"); ok {
				walk(mod)
				roots++
			} else if _, ok := pageFiles[m[1][len("./"):]]; !ok {
				t.Errorf("%s imports %s, which is not served", name, m[1])
			}
		}
	}
	if roots < 2 {
		t.Fatalf("the page imports %d client modules; want view.js and door.js at least", roots)
	}
	var graph []string
	for k := range seen {
		graph = append(graph, k)
	}
	slices.Sort(graph)
	served := slices.Sorted(slices.Values(ClientModules))
	if !slices.Equal(graph, served) {
		t.Fatalf("the page imports %v; ClientModules serves %v", graph, served)
	}
}

// TestViewRoutes: each client module under /local/view/client/ with the
// page's headers; other files of dist, listings and traversal are 404.
func TestViewRoutes(t *testing.T) {
	s := newTestService(t, nil, nil)
	mux := http.NewServeMux()
	s.Mount(mux)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	for _, name := range ClientModules {
		rec := get("/local/view/client/" + name)
		want, _ := fs.ReadFile(jsclient.Dist, "dist/"+name)
		if rec.Code != 200 || rec.Body.String() != string(want) || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" ||
			rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", name, rec.Code, rec.Header())
		}
	}
	entries, err := fs.ReadDir(jsclient.Dist, "dist")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(ClientModules, e.Name()) {
			if rec := get("/local/view/client/" + e.Name()); rec.Code != 404 {
				t.Errorf("%s is served: %d", e.Name(), rec.Code)
			}
		}
	}
	for _, path := range []string{"/local/view/", "/local/view/client/", "/local/view/client/x.js", "/local/view/index.html"} {
		if rec := get(path); rec.Code != 404 {
			t.Errorf("%s: %d", path, rec.Code)
		}
	}
}
