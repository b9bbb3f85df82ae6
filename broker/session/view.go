package session

import (
	"embed"
	"net/http"
	"path"
	"regexp"
)

// viewFiles is the built-in view page: static, no inline script or style,
// no secret in it. The credential reaches it only in the URL fragment,
// which browsers never send to a server.
//
//go:embed view/index.html view/view.js view/view.css
var viewFiles embed.FS

var viewTypes = map[string]string{
	"index.html": "text/html; charset=utf-8",
	"view.js":    "text/javascript; charset=utf-8",
	"view.css":   "text/css; charset=utf-8",
}

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

func (s *Service) serveViewPage(w http.ResponseWriter, r *http.Request) {
	s.serveViewFile(w, r, "index.html")
}

func (s *Service) serveViewAsset(w http.ResponseWriter, r *http.Request) {
	s.serveViewFile(w, r, path.Base(r.URL.Path))
}

func (s *Service) serveViewFile(w http.ResponseWriter, r *http.Request, name string) {
	data, err := viewFiles.ReadFile("view/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", viewTypes[name])
	h.Set("Content-Security-Policy", viewCSP(r.Host))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	_, _ = w.Write(data)
}
