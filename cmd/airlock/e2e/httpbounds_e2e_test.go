package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// End-to-end tests of the HTTP bounds of PROTOCOL section 1 that are not
// about slow clients (see slowclient_e2e_test.go): the launch token's
// length, the call body's cap, and what the debug access log may print.

// startedOrExited waits until p printed its listening line (true) or
// exited (false).
func (p *proc) startedOrExited() bool {
	p.t.Helper()
	testkit.Eventually(p.t, "airlock listens or exits", func() bool {
		select {
		case <-p.done:
			return true
		default:
			return strings.Contains(p.stdout.String(), "\n")
		}
	})
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func TestServeRefusesShortLaunchToken(t *testing.T) {
	t.Parallel()
	short := map[string]string{
		"31 characters":           strings.Repeat("k", 31),
		"32 bytes, 16 characters": strings.Repeat("é", 16),
	}
	for name, tok := range short {
		t.Run(name, func(t *testing.T) {
			for _, via := range []string{"TENSORVIZ_LOCAL_TOKEN", "AIRLOCK_LOCAL_TOKEN"} {
				p := start(t, []string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir()},
					procOptions{Env: []string{via + "=" + tok}, Secrets: []string{tok}})
				if p.startedOrExited() {
					t.Fatalf("%s: the broker started with a %d-character token", via, len([]rune(tok)))
				}
				lines := scanLines(p.Stderr())
				if p.exit != exitcode.Usage || len(lines) != 1 || !strings.Contains(lines[0], "32 characters") {
					t.Errorf("%s: exit %d, stderr %q: want exit 2 and one line naming 32 characters", via, p.exit, lines)
				}
			}
		})
	}
	// Exactly 32 characters is enough, from a token file as well.
	tok := strings.Repeat("k", 32)
	file := writeFile(t, "token", tok+"\n")
	must(t, os.Chmod(file, 0o600))
	p := startServe(t, procOptions{Args: []string{"--token-file", file}, Secrets: []string{tok}})
	code, _, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": tok}, nil)
	if code != 200 {
		t.Errorf("a 32-character token: GET /v1/tools %d", code)
	}
	file = writeFile(t, "short", tok[:31]+"\n")
	must(t, os.Chmod(file, 0o600))
	p = start(t, []string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--token-file", file},
		procOptions{Secrets: []string{tok[:31]}})
	if p.startedOrExited() {
		t.Fatalf("the broker started with a 31-character token file")
	}
	if p.exit != exitcode.Usage || !strings.Contains(p.Stderr(), "32 characters") {
		t.Errorf("a 31-character token file: exit %d, stderr %q", p.exit, p.Stderr())
	}
}

// paddedCallBody is a call envelope padded with a string in args to exactly n
// bytes.
func paddedCallBody(t *testing.T, callID string, n int) []byte {
	t.Helper()
	head := fmt.Sprintf(`{"v":1,"callId":%q,"tool":"x","descriptorId":"nope","boundsEcho":{},"args":{"pad":"`, callID)
	tail := `"}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("body of %d bytes is too small", n)
	}
	return append(append([]byte(head), bytes.Repeat([]byte("x"), pad)...), tail...)
}

func TestCallBodyOverCapIsMalformed(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	auth := map[string]string{"X-Tensorviz-Token": testToken}
	series := func(outcome string) string {
		return `airlock_tool_calls_total{descriptor="OTHER",outcome="` + outcome + `",tool="OTHER"}`
	}

	code, data, _ := p.do("POST", "/v1/calls", auth, paddedCallBody(t, "over", 16<<20+1))
	a, err := wire.ParseAnswer(data)
	if err != nil {
		t.Fatalf("over the cap: %d, not an answer envelope (%v): %.200s", code, err, data)
	}
	if code != 400 || a.OK || a.Refused != wire.Malformed || a.CallID != wire.UnreadableCallID {
		t.Errorf("over the cap: %d %+v, want 400 malformed with callId %q", code, a, wire.UnreadableCallID)
	}
	if strings.Contains(a.Why, "xxxx") {
		t.Errorf("why quotes the body: %q", a.Why)
	}

	// At exactly the cap the body is read and judged as a call: it names a
	// descriptor nobody admitted. This also proves the refusal above was the
	// cap and not the content.
	code, data, _ = p.do("POST", "/v1/calls", auth, paddedCallBody(t, "edge", 16<<20))
	if a, err = wire.ParseAnswer(data); err != nil || code != 200 || a.Refused != wire.UnattributedCall || a.CallID != "edge" {
		t.Errorf("at the cap: %d %+v (%v), want 200 unattributed-call", code, a, err)
	}

	if n := p.metric(t, series("malformed")); n != 1 {
		t.Errorf("malformed calls counted %v, want 1", n)
	}
	if n := p.metric(t, series("exec-threw")); n > 0 {
		t.Errorf("the over-cap body was counted as a tool failure (exec-threw %v)", n)
	}
	if n := p.metric(t, series("unattributed-call")); n != 1 {
		t.Errorf("unattributed calls counted %v, want 1", n)
	}
}

// secretLike is 43 characters of random hex, shaped like a credential.
func secretLike(t *testing.T) string {
	var b [22]byte
	_, err := rand.Read(b[:])
	must(t, err)
	return hex.EncodeToString(b[:])[:43]
}

func TestDebugAccessLogNamesRoutesNotPaths(t *testing.T) {
	t.Parallel()
	p := startServe(t, procOptions{Args: []string{"--no-builtin", "--log-level", "debug"}, Env: tokenEnv(), Secrets: []string{testToken}})
	auth := map[string]string{"X-Tensorviz-Token": testToken}
	var secrets []string
	fresh := func() string {
		s := secretLike(t)
		for _, v := range []string{s, strings.ToUpper(s)} {
			secrets = append(secrets, v)
			p.AddSecret(v)
		}
		return s
	}
	requests := []struct {
		method, path string
		header       map[string]string
		status       int
		pattern      string
	}{
		{"GET", "/local/view/" + fresh(), nil, 404, "unmatched"},
		{"GET", "/v1/tools/" + fresh(), auth, 404, "unmatched"},
		{"POST", "/local/sessions/" + fresh(), auth, 405, "unmatched"},                     // only DELETE takes an id
		{"DELETE", "/local/sessions/" + fresh(), auth, 404, "DELETE /local/sessions/{id}"}, // the route, never the id
		{"PUT", "/v1/tools", auth, 405, "unmatched"},
		{"X" + strings.ToUpper(fresh()), "/healthz", nil, 405, "unmatched"}, // a method is client text too
		{"GET", "/" + fresh() + "/healthz", nil, 404, "unmatched"},
		{"GET", "/local/view", nil, 200, "GET /local/view"},
		{"GET", "/v1/tools", auth, 200, "GET /v1/tools"},
		{"GET", "/healthz", nil, 200, "GET /healthz"},
	}
	for _, r := range requests {
		if code, _, _ := p.do(r.method, r.path, r.header, nil); code != r.status {
			t.Errorf("%s %s: %d, want %d", r.method, r.path, code, r.status)
		}
	}

	// Wait until every request has its log line, then read them all.
	var logged []map[string]any
	testkit.Eventually(t, "every request is logged", func() bool {
		logged = logged[:0]
		for _, line := range scanLines(p.Stderr()) {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil && ev["msg"] == "request" {
				logged = append(logged, ev)
			}
		}
		return len(logged) >= len(requests)
	})
	for i, r := range requests {
		ev := logged[i]
		method := r.method
		if strings.HasPrefix(method, "X") {
			method = "OTHER"
		}
		if ev["method"] != method || ev["pattern"] != r.pattern || ev["status"] != float64(r.status) {
			t.Errorf("%s %s logged as %v, want pattern %q status %d", r.method, r.path, ev, r.pattern, r.status)
		}
		if _, ok := ev["path"]; ok {
			t.Errorf("%s %s: the log line carries the path: %v", r.method, r.path, ev)
		}
	}
	out := p.stdout.String() + p.Stderr()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("a secret-like path segment reached the output")
		}
	}
}
