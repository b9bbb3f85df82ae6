package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
)

// testToken is the launch token of most end-to-end brokers. Every harness
// process fails its test if the token shows up in its output.
const testToken = "e2e-launch-token-5f1c9a7d3b2e4f60a8c1d7e9b3f5a2c4"

func tokenEnv() []string { return []string{"TENSORVIZ_LOCAL_TOKEN=" + testToken} }

func withToken() procOptions {
	return procOptions{Env: tokenEnv(), Secrets: []string{testToken}}
}

// TestServeUnknownVariableIsAWarning: a variable of the launcher's own
// (AIRLOCK_BIN) or a typo does not stop the broker; the typo is named
// with the setting meant, and the value of a known setting still counts.
func TestServeUnknownVariableIsAWarning(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Env: append(tokenEnv(), "AIRLOCK_BIN=/usr/local/bin/airlock", "AIRLOCK_LOG_LEVL=debug"),
		Secrets: []string{testToken}})
	p.waitStderr("did you mean AIRLOCK_LOG_LEVEL?")
	p.waitStderr("environment variable AIRLOCK_BIN is not a setting and is ignored")
	if code, _, _ := p.do("GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
}

func TestServeListeningLineIsFirst(t *testing.T) {
	t.Parallel()
	p := startServe(t, withToken())
	lines := scanLines(p.stdout.String())
	if len(lines) != 1 {
		t.Fatalf("stdout has %d lines, want only the listening line: %q", len(lines), lines)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev["event"] != "listening" || !strings.HasPrefix(ev["addr"].(string), "127.0.0.1:") || p.Port == 0 {
		t.Errorf("listening line %v", ev)
	}
	for _, line := range scanLines(p.Stderr()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("a stderr line is not JSON: %q", line)
		}
	}
	code, body, _ := p.do("GET", "/healthz", nil, nil)
	if code != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Errorf("healthz: %d %s", code, body)
	}
}

// TestServeInertWithoutToken: without a launch token the token routes
// answer 404 with the NOT_FOUND error body of PROTOCOL section 1.4.
func TestServeInertWithoutToken(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{})
	const notFound = `{"error":{"code":"NOT_FOUND","message":"not found"}}` + "\n"
	for _, c := range []struct{ method, path string }{
		{"POST", "/local/sessions"}, {"GET", "/v1/tools"}, {"POST", "/v1/calls"}, {"GET", "/v1/plugins"},
		{"POST", "/mcp"}, {"GET", "/mcp"}, {"DELETE", "/mcp"},
	} {
		code, body, h := p.do(c.method, c.path, map[string]string{"X-Tensorviz-Token": "anything"}, []byte(`{}`))
		if code != 404 || string(body) != notFound || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s without a launch token: %d %s %q, want 404 %s", c.method, c.path, code, h.Get("Content-Type"), body, notFound)
		}
	}
	if code, _, _ := p.do("GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("healthz should still answer, got %d", code)
	}
}

func TestServeTokenIsCheckedOnEveryV1Route(t *testing.T) {
	t.Parallel()
	p := startServe(t, withToken())
	for _, tok := range []string{"", "wrong", testToken[:len(testToken)-1], testToken + "x", strings.ToUpper(testToken)} {
		for _, path := range []string{"/v1/tools", "/v1/plugins"} {
			code, body, _ := p.do("GET", path, map[string]string{"X-Tensorviz-Token": tok}, nil)
			if code != 401 || !strings.Contains(string(body), `"INVALID_CREDENTIALS"`) {
				t.Errorf("GET %s with token %q: %d %s", path, tok, code, body)
			}
			if strings.Contains(string(body), tok) && tok != "" {
				t.Errorf("error body echoes the presented token")
			}
		}
	}
	code, _, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil)
	if code != 200 {
		t.Errorf("GET /v1/tools with the token: %d", code)
	}
	metrics := scrape(t, p)
	if !strings.Contains(metrics, `airlock_auth_refusals_total{code="invalid-credentials",endpoint="v1"} 10`) {
		t.Errorf("auth refusals not counted:\n%s", grep(metrics, "auth_refusals"))
	}
}

func TestServeRefusesRebindingHost(t *testing.T) {
	t.Parallel()
	p := startServe(t, withToken())
	port := p.Addr[strings.LastIndex(p.Addr, ":")+1:]
	refused := []string{"evil.example:" + port, "127.0.0.1", "127.0.0.1:1", "localhost.evil.example:" + port, "127.0.0.2:" + port, "[::2]:" + port}
	for _, host := range refused {
		code, body, _ := p.do("GET", "/healthz", map[string]string{"Host": host}, nil)
		if code != 403 || !strings.Contains(string(body), "INVALID_ORIGIN") {
			t.Errorf("Host %q: %d %s, want 403", host, code, body)
		}
	}
	// Forwarding headers never make a foreign Host acceptable.
	code, _, _ := p.do("GET", "/healthz", map[string]string{"Host": "evil.example:" + port, "X-Forwarded-Host": "127.0.0.1:" + port, "Forwarded": "host=127.0.0.1:" + port}, nil)
	if code != 403 {
		t.Errorf("forwarding headers changed the verdict: %d", code)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port} {
		if code, _, _ := p.do("GET", "/healthz", map[string]string{"Host": host}, nil); code != 200 {
			t.Errorf("Host %q refused: %d", host, code)
		}
	}
}

// refusalDeadline bounds a command that must be refused at start-up: a
// refusal takes well under a second, so this is only the line between
// "refused slowly on a loaded machine" and "started instead".
const refusalDeadline = time.Minute

func TestServeRefusesBadStarts(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 0600 token file of another user (tests run as root in CI; elsewhere
	// the chown fails and the case is left out).
	foreign := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(foreign, []byte(testToken), 0o600))
	foreignOK := os.Chown(foreign, 65534, 65534) == nil
	cases := map[string]struct {
		args []string
		env  []string
		want string
	}{
		"token file of another user":   {[]string{"serve", "--token-file", foreign}, nil, "another user"},
		"public bind without token":    {[]string{"serve", "--listen", "0.0.0.0:0"}, nil, "non-loopback"},
		"unknown flag":                 {[]string{"serve", "--tokne", "x"}, nil, "unknown flag: --tokne"},
		"token as argument":            {[]string{"serve", "--listen", "127.0.0.1:0", testToken}, nil, "unexpected argument"},
		"bad listen":                   {[]string{"serve", "--listen", "nonsense"}, nil, "listen"},
		"bad number":                   {[]string{"serve"}, []string{"VOICEBOX_HELLO_BOUND_MS=soon"}, "hello_bound_ms"},
		"bad log level":                {[]string{"serve", "--log-level", "loud"}, nil, "log_level"},
		"token file readable":          {[]string{"serve", "--token-file", tokenFile}, nil, "chmod 600"},
		"token twice":                  {[]string{"serve", "--token-file", tokenFile}, tokenEnv(), "once"},
		"missing config file":          {[]string{"serve", "--config", "/nonexistent/airlock.yaml"}, nil, "airlock serve: --config /nonexistent/airlock.yaml: no such file\n"},
		"missing plugins dir":          {[]string{"serve", "--listen", "127.0.0.1:0", "--plugins", "/nonexistent/plugins"}, nil, "airlock serve: --plugins /nonexistent/plugins: no such folder\n"},
		"missing root":                 {[]string{"serve", "--listen", "127.0.0.1:0", "--root", "notes=/nonexistent/notes"}, nil, "airlock serve: --root notes=/nonexistent/notes: no such folder\n"},
		"missing token file":           {[]string{"serve", "--listen", "127.0.0.1:0", "--token-file", "/nonexistent/token"}, nil, "airlock serve: --token-file /nonexistent/token: no such file\n"},
		"config file with unknown key": {[]string{"serve", "--config", writeFile(t, "c.yaml", "listne: x\n")}, nil, "listne"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if name == "token file of another user" && !foreignOK {
				t.Skip("cannot chown here (not root)")
			}
			args := append(c.args, "--data", t.TempDir())
			// A broker that starts instead of being refused fails here
			// rather than hanging the run.
			code, stdout, stderr := runCLIWithin(t, refusalDeadline, c.env, args...)
			if code == 0 {
				t.Fatalf("exit 0; stdout %q", stdout)
			}
			if stdout != "" {
				t.Errorf("refused after it started: stdout %q", stdout)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr does not name the problem (%q):\n%s", c.want, stderr)
			}
			if strings.Contains(stdout+stderr, testToken) {
				t.Errorf("the token appears in the output")
			}
		})
	}
}

func TestServeConfigLayers(t *testing.T) {
	t.Parallel()
	// The file sets a port, the environment overrides it, a flag overrides both.
	file := writeFile(t, "airlock.yaml", "listen: 127.0.0.1:1\nlocal:\n  tombstone_retention_seconds: 5\n")
	p := startServe(t, procOptions{
		Args:    []string{"--config", file},
		Env:     append(tokenEnv(), "AIRLOCK_LISTEN=127.0.0.1:2"),
		Secrets: []string{testToken},
	})
	if p.Port == 1 || p.Port == 2 {
		t.Errorf("--listen did not win over the file and the environment: port %d", p.Port)
	}
}

func TestServeTokenFromFile(t *testing.T) {
	t.Parallel()
	tokenFile := writeFile(t, "token", testToken+"\n")
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, procOptions{Args: []string{"--token-file", tokenFile}, Secrets: []string{testToken}})
	if code, _, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil); code != 200 {
		t.Errorf("token from file not accepted: %d", code)
	}
}

func TestServeSIGHUPReloadsAndKeepsServing(t *testing.T) {
	t.Parallel()
	p := startServe(t, withToken())
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the reload logged", func() bool { return strings.Contains(p.Stderr(), "reload requested") })
	if code, _, _ := p.do("GET", "/healthz", nil, nil); code != 200 {
		t.Errorf("not serving after SIGHUP: %d", code)
	}
}

func TestServeMetricsOnOwnListener(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--metrics-listen", "127.0.0.1:0"}, Env: tokenEnv(), Secrets: []string{testToken}})
	if code, _, _ := p.do("GET", "/metrics", nil, nil); code != 404 {
		t.Errorf("/metrics still on the main listener: %d", code)
	}
	testkit.Eventually(t, "the metrics listener logged", func() bool { return strings.Contains(p.Stderr(), "metrics listening") })
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// scrape returns the broker's metrics exposition.
func scrape(t *testing.T, p *proc) string {
	t.Helper()
	code, body, _ := p.do("GET", "/metrics", nil, nil)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	return string(body)
}

// grep returns the lines of s containing sub.
func grep(s, sub string) string {
	var out []string
	for _, l := range scanLines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServeStandaloneProfile: `serve --standalone` (or AIRLOCK_STANDALONE)
// is the standalone plugin service: it starts only with a launch token and
// a listen address on 127.0.0.1, and exits 2 for anything else, a public
// address with a token included; a configuration that also turns source
// proposals on is refused. Started, it mints sessions without source
// proposals, whatever the extension asks, and the relay holds them to it.
func TestServeStandaloneProfile(t *testing.T) {
	t.Parallel()
	refused := map[string]struct {
		args []string
		env  []string
		want string
	}{
		"no token":                {[]string{"serve", "--standalone", "--listen", "127.0.0.1:0"}, nil, "standalone profile needs a launch token"},
		"public bind with token":  {[]string{"serve", "--standalone", "--listen", "0.0.0.0:0"}, tokenEnv(), "127.0.0.1"},
		"public bind, env":        {[]string{"serve", "--listen", "0.0.0.0:0"}, append(tokenEnv(), "AIRLOCK_STANDALONE=1"), "127.0.0.1"},
		"ipv6 loopback":           {[]string{"serve", "--standalone", "--listen", "[::1]:0"}, tokenEnv(), "127.0.0.1"},
		"localhost":               {[]string{"serve", "--standalone", "--listen", "localhost:0"}, tokenEnv(), "127.0.0.1"},
		"public metrics listener": {[]string{"serve", "--standalone", "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0"}, tokenEnv(), "metrics_listen"},
		"source proposals on":     {[]string{"serve", "--standalone", "--listen", "127.0.0.1:0"}, append(tokenEnv(), "AIRLOCK_LOCAL_SOURCE_PROPOSALS=true"), "local.source_proposals"},
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.env, append(c.args, "--no-builtin", "--data", t.TempDir())...)
			if code != exitcode.Usage || strings.Contains(stdout, `"listening"`) {
				t.Fatalf("exit %d, want %d; stdout %q stderr %s", code, exitcode.Usage, stdout, stderr)
			}
			if !strings.Contains(stderr, c.want) || strings.Contains(stdout+stderr, testToken) {
				t.Errorf("stderr does not name %q (or shows the token):\n%s", c.want, stderr)
			}
		})
	}

	p := startServe(t, procOptions{Args: []string{"--standalone", "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	if !strings.HasPrefix(p.Addr, "127.0.0.1:") {
		t.Fatalf("standalone listens on %s", p.Addr)
	}
	m, err := (&localclient.Client{Base: p.URL(), Token: testToken}).Mint(tctx(t), localclient.MintOptions{LaunchOrigin: p.URL(), CanProposeSourceEdits: true})
	if err != nil {
		t.Fatal(err)
	}
	p.AddSecret(m.ViewCredential)
	p.AddSecret(m.HostCookieKey)
	if m.Capabilities.CanProposeSourceEdits {
		t.Errorf("the standalone service minted a session that can propose source edits: %+v", m.Capabilities)
	}
	ck := p.bootstrap(t, m)
	host, _ := p.host(t, m)
	view, _ := p.view(t, m, ck)
	host.expect("viewState")
	view.send("sourceEditRequest", req("s1", "t", nil), 0)
	view.refused("INVALID_MESSAGE", "capability")
}
