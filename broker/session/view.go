package session

import (
	"embed"
	"io/fs"
	"net/http"
	"regexp"

	"github.com/airlock/airlock/broker/jsclient"
)

// viewFiles is the built-in view page: static, no inline script or style,
// no secret in it. The credential reaches it only in the URL fragment,
// which browsers never send to a server.
//
//go:embed view/index.html view/app.js view/tools.js view/folder.js view/view.css
var viewFiles embed.FS

// pageFiles are the page's own files by the name they are served under
// /local/view/; index.html is GET /local/view itself.
var pageFiles = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"tools.js":  "text/javascript; charset=utf-8",
	"folder.js": "text/javascript; charset=utf-8",
	"view.css":  "text/css; charset=utf-8",
}

// ClientModules are the modules of @airlock/client the page imports
// (view.js and view-state.js for app.js, door.js for tools.js, and what
// they import), served from jsclient.Dist at /local/view/client/<name>. Nothing else of dist is reachable: the Node
// host and the .d.ts files have no business in a browser (RATIONALE.md,
// "Why is the view page plain ES modules served from the embedded
// client?"). A test holds this list equal to the page's import graph.
var ClientModules = []string{"view.js", "emitter.js", "messages.js", "view-state.js", "door.js", "executor.js", "wire.js", "fold.js", "rules.js"}

// hostPattern is what a Host may look like to be named in the CSP.
var hostPattern = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// viewCSP allows only the page's own script and style and connections to
// its own origin (ws: named explicitly for browsers whose 'self' does not
// cover it).
func viewCSP(host string) string {
	connect := "'self'"
	if hostPattern.MatchString(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src " + connect +
		"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// mountView registers the page, its files and the client modules, each
// an exact route: nothing under /local/view/ is listed or guessed.
func (s *Service) mountView(mux *http.ServeMux) {
	mux.HandleFunc("GET /local/view", func(w http.ResponseWriter, r *http.Request) {
		serveStatic(w, r, viewFiles, "view/index.html", "text/html; charset=utf-8")
	})
	for name, ctype := range pageFiles {
		mux.HandleFunc("GET /local/view/"+name, func(w http.ResponseWriter, r *http.Request) {
			serveStatic(w, r, viewFiles, "view/"+name, ctype)
		})
	}
	for _, name := range ClientModules {
		mux.HandleFunc("GET /local/view/client/"+name, func(w http.ResponseWriter, r *http.Request) {
			serveStatic(w, r, jsclient.Dist, "dist/"+name, "text/javascript; charset=utf-8")
		})
	}
}

// serveStatic answers one embedded file with the page's security headers.
func serveStatic(w http.ResponseWriter, r *http.Request, files fs.FS, name, ctype string) {
	data, err := fs.ReadFile(files, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", viewCSP(r.Host))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	_, _ = w.Write(data)
}
