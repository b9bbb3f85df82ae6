package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	brokersession "github.com/airlock/airlock/broker/session"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
)

// TestSessionSecretsNeverLeak runs the whole flow with debug logging,
// with refusals of every kind, and checks that no secret (launch token,
// view credential, cookie keys) appears in the logs (the harness checks
// every registered secret at cleanup), the metrics, error bodies or
// protocol messages; and that metric labels carry no identifiers.
func TestSessionSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 2, localclient.MintOptions{CanProposeSourceEdits: true})
	secrets := []string{sessionToken, s.m.ViewCredential, s.m.HostCookieKey, s.ck.Value, s.pass.Key}
	var bodies []string
	collect := func(status int, body []byte, _ http.Header) { bodies = append(bodies, string(body)) }
	collect(bootstrapRaw(p, s.m.LaunchOrigin, s.m.WorkspaceSessionID, s.m.ViewCredential, nil))
	collect(bootstrapRaw(p, s.m.LaunchOrigin, s.m.WorkspaceSessionID, s.m.HostCookieKey, nil))
	collect(bootstrapRaw(p, "http://evil.example", s.m.WorkspaceSessionID, s.m.ViewCredential, nil))
	collect(p.do("POST", "/local/sessions", map[string]string{"X-Tensorviz-Token": sessionToken + "x"}, []byte(`{"launchOrigin":"http://127.0.0.1:1"}`)))
	collect(p.do("POST", "/local/sessions", map[string]string{"X-Tensorviz-Token": sessionToken}, []byte(`{"launchOrigin":"`+s.m.ViewCredential+`"}`)))
	for _, ck := range []*http.Cookie{{Name: contract.HostCookie, Value: s.ck.Value}, s.ck} {
		a := p.dial(t, "attacker", localclient.DialOptions{Origin: "http://evil.example", Cookies: []*http.Cookie{ck}})
		_, err := a.Receive(tctx(t))
		bodies = append(bodies, err.Error())
	}
	var frames []string
	s.views[0].sendRaw([]byte(`{"protocolVersion":1,"workspaceSessionId":"` + s.m.WorkspaceSessionID + `","type":"revealNode","payload":{"nodeId":"` + s.m.HostCookieKey + `"},"x":"` + s.ck.Value + `"}`))
	frames = append(frames, string(s.views[0].next().Raw))
	s.views[0].sendRaw([]byte(s.m.ViewCredential))
	frames = append(frames, string(s.views[0].next().Raw))
	s.views[0].send("validateRequest", req("r1", "t", nil), 0)
	s.host.expect("validateRequest")
	_ = s.views[0].Close()
	frames = append(frames, string(s.host.next().Raw), string(s.host.next().Raw)) // synthesized cancel, viewState
	_, metricsBody, _ := p.do("GET", "/metrics", nil, nil)
	everything := strings.Join(append(append(bodies, frames...), string(metricsBody)), "\n")
	for _, secret := range secrets {
		if strings.Contains(everything, secret) {
			t.Fatalf("a secret (%d bytes) reached a response, frame or metric", len(secret))
		}
	}
	ids := append([]string{s.m.WorkspaceSessionID}, s.ids...)
	for _, line := range strings.Split(string(metricsBody), "\n") {
		if !strings.HasPrefix(line, "airlock_") {
			continue
		}
		for _, id := range ids {
			if strings.Contains(line, id) {
				t.Fatalf("an identifier is a metric label: %s", line)
			}
		}
	}
	labelled := regexp.MustCompile(`^airlock_relay_messages_total\{direction="(host-to-views|view-to-host|host-to-view|broker)",type="[a-z]+(-[a-z]+)*"\} `)
	for _, line := range strings.Split(string(metricsBody), "\n") {
		if strings.HasPrefix(line, "airlock_relay_messages_total{") && !labelled.MatchString(line) {
			t.Fatalf("relay metric outside the closed label sets: %s", line)
		}
	}
	if p.metric(t, `airlock_relay_messages_total{direction="view-to-host",type="validate-request"}`) != 1 {
		t.Fatal("validateRequest not counted")
	}
	if p.metric(t, `airlock_ws_connections{endpoint="ws",role="host"}`) != 1 {
		t.Fatal("host connection gauge")
	}
}

// TestSessionViewPage: the page, its files and the client modules it
// imports are served with the page's CSP and security headers and their
// own content types; nothing else of the embedded client (the Node host,
// the type declarations) and no listing is reachable.
func TestSessionViewPage(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	status, body, _ := p.do("GET", "/local/view", nil, nil)
	if status != 200 || !strings.Contains(string(body), `<script type="module" src="/local/view/app.js">`) {
		t.Fatalf("view page %d", status)
	}
	if strings.Contains(string(body), "<script>") || strings.Contains(string(body), "style=") {
		t.Error("inline script or style in the page")
	}
	files := map[string]string{
		"/local/view":          "text/html; charset=utf-8",
		"/local/view/app.js":   "text/javascript; charset=utf-8",
		"/local/view/view.css": "text/css; charset=utf-8",
		"/local/view/tools.js": "text/javascript; charset=utf-8",
	}
	for _, m := range brokersession.ClientModules { // the client modules the page imports, and only those
		files["/local/view/client/"+m] = "text/javascript; charset=utf-8"
	}
	for path, ctype := range files {
		status, _, h := p.do("GET", path, nil, nil)
		if status != 200 || h.Get("Content-Type") != ctype {
			t.Errorf("%s: %d %q, want 200 %q", path, status, h.Get("Content-Type"), ctype)
		}
		csp := h.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("Cross-Origin-Resource-Policy") != "same-origin" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	for _, path := range []string{"/local/view/", "/local/view/client/", "/local/view/client", "/local/view/client/host.js",
		"/local/view/client/generated/call.js", "/local/view/client/view.d.ts", "/local/view/client/%2e%2e/app.js",
		"/local/view/client/dist/view.js", "/local/view/index.html", "/local/view.js", "/local/view.css", "/local/view/view/index.html"} {
		if status, body, _ := p.do("GET", path, nil, nil); status != 404 {
			t.Errorf("%s: %d %.80q", path, status, body)
		}
	}
	app := func() string { _, b, _ := p.do("GET", "/local/view/app.js", nil, nil); return string(b) }()
	if !strings.Contains(app, `from "./client/view.js"`) || !strings.Contains(app, "takeFragment") || strings.Contains(app, "innerHTML") ||
		strings.Contains(app, "window.open") || strings.Contains(app, "insertAdjacentHTML") || strings.Contains(app, "eval(") {
		t.Error("app.js must import the client, clear the fragment, and never parse host data as HTML or open windows")
	}
}

// TestSessionMintCommand: `airlock mint` prints the mint response and the
// view URL whose fragment the page reads, for the broker's own origin by
// default; without the token it refuses.
func TestSessionMintCommand(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	code, out, errOut := runCLI(t, nil, "mint", "--broker", p.URL())
	if code != exitcode.Usage || out != "" || !strings.Contains(errOut, "TENSORVIZ_LOCAL_TOKEN") {
		t.Fatalf("mint without a token: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}, "mint", "--broker", p.URL(), "--ttl", "60")
	if code != 0 {
		t.Fatalf("mint: %d %s", code, errOut)
	}
	lines := scanLines(out)
	if len(lines) != 2 {
		t.Fatalf("mint printed %q", out)
	}
	var m localclient.Minted
	if err := jsonUnmarshal(lines[0], &m); err != nil || m.LaunchOrigin != p.URL() {
		t.Fatalf("mint response %q (%v)", lines[0], err)
	}
	p.AddSecret(m.ViewCredential)
	p.AddSecret(m.HostCookieKey)
	if lines[1] != p.URL()+"/local/view#"+m.WorkspaceSessionID+"."+m.ViewCredential {
		t.Fatalf("view URL %q", lines[1])
	}
	p.bootstrap(t, &m) // the printed credential works with the broker's own origin
	code, _, errOut = runCLI(t, []string{"AIRLOCK_LOCAL_TOKEN=wrong"}, "mint", "--broker", p.URL())
	if code != exitcode.Refused || !strings.Contains(errOut, "401 INVALID_CREDENTIALS") {
		t.Fatalf("wrong token: %d %q", code, errOut)
	}
	if code, out, _ := runCLI(t, nil, "mint", "--help"); code != 0 || !strings.Contains(out, "only Airlock command that prints a credential") {
		t.Fatalf("help: %d %q", code, out)
	}
}
