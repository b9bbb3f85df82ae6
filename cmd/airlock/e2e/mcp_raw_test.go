package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// rawMCP is `airlock mcp` driven line by line, as a client that writes
// what it likes would: no SDK between the test and the wire.
type rawMCP struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan string
	stderr *testkit.Buffer
}

// startRawMCP runs `airlock mcp --no-builtin --log-level debug` on a
// plugins folder serving the guest fixture's tools under descriptor fx
// (60 s bounds), and opens the session.
func startRawMCP(t *testing.T) *rawMCP { t.Helper(); return startRawMCPAt(t, latestRevision) }

// latestRevision is the MCP revision the raw clients speak unless a test
// names another.
const latestRevision = "2025-11-25"

// startRawMCPAt is startRawMCP initializing at revision, which the
// server must answer with.
func startRawMCPAt(t *testing.T, revision string) *rawMCP {
	t.Helper()
	plugDir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, AllowedHosts: []string{}, Roots: []string{}}
	must(t, plugins.WriteFolder(plugDir, fxManifestOf("fx", b, "echo", "trap", "loop"), testkit.Fixture(t, "guest.wasm")))
	cmd := exec.Command(binPath, "mcp", "--plugins", plugDir, "--no-builtin", "--log-level", "debug", "--data", t.TempDir())
	cmd.Env = append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir)
	r := openRawMCP(t, cmd, revision)
	testkit.Eventually(t, "airlock mcp to compile its modules", func() bool { return strings.Contains(r.stderr.String(), allCompiled) })
	return r
}

// openRawMCP starts cmd, an `airlock mcp`, and opens the session at
// revision, which the server must answer with.
func openRawMCP(t *testing.T, cmd *exec.Cmd, revision string) *rawMCP {
	t.Helper()
	r := &rawMCP{t: t, lines: make(chan string, 64), stderr: &testkit.Buffer{}}
	cmd.Stderr = r.stderr
	var err error
	r.stdin, err = cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	exited := make(chan error, 1)
	go func() { <-read; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.stdin.Close()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("airlock mcp: %v", err)
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("airlock mcp still runs a minute after its stdin closed")
			<-exited
		}
		if t.Failed() {
			t.Logf("airlock mcp stderr:\n%s", tail(r.stderr.String(), 8000))
		}
	})
	if revision >= statelessRevision {
		r.send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":` + withMeta(revision, `{}`) + `}`)
		if m := r.next(); !discovered(m, revision) {
			t.Fatalf("server/discover at %s: %v", revision, m)
		}
		return r
	}
	r.send(initializeAt(revision))
	if m := r.next(); answeredRevision(m) != revision {
		t.Fatalf("initialize at %s: %v", revision, m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// statelessRevision is the MCP revision without sessions: no initialize,
// server/discover instead, and the revision in each request's _meta.
const statelessRevision = "2026-07-28"

// withMeta is the params object params (one JSON object) of a request at
// revision: from statelessRevision on it carries the revision and the
// client's capabilities in its _meta, where a session held them before.
func withMeta(revision, params string) string {
	if revision < statelessRevision {
		return params
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + revision + `","io.modelcontextprotocol/clientCapabilities":{}}`
	if strings.TrimSpace(params) == "{}" {
		return "{" + meta + "}"
	}
	return "{" + meta + "," + strings.TrimPrefix(strings.TrimSpace(params), "{")
}

// discovered reports whether m is a server/discover result listing
// revision among the supported ones.
func discovered(m map[string]any, revision string) bool {
	res, _ := m["result"].(map[string]any)
	vs, _ := res["supportedVersions"].([]any)
	for _, v := range vs {
		if v == revision {
			return true
		}
	}
	return false
}

func (r *rawMCP) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// next is the next message on stdout, within a minute.
func (r *rawMCP) next() map[string]any {
	r.t.Helper()
	return r.nextWithin(time.Minute)
}

// nextWithin is the next message on stdout, within d.
func (r *rawMCP) nextWithin(d time.Duration) map[string]any {
	r.t.Helper()
	select {
	case line := <-r.lines:
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			r.t.Fatalf("not JSON on stdout: %q", line)
		}
		return m
	case <-time.After(d):
		r.t.Fatalf("no message on stdout within %v", d)
		return nil
	}
}

// response is the next message that is not a notification.
func (r *rawMCP) response() map[string]any {
	r.t.Helper()
	for {
		if m := r.next(); m["method"] == nil {
			return m
		}
	}
}

// rpcCode is the JSON-RPC error code of a response, 0 for a result.
func rpcCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

// logged reports whether a line of stderr holds every fragment.
func logged(stderr string, fragments ...string) bool {
	for _, line := range scanLines(stderr) {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(line, f)
		}
		if all {
			return true
		}
	}
	return false
}

// initializeAt is an initialize request (id 0) at revision.
func initializeAt(revision string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + revision +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
}

// answeredRevision is the protocolVersion of an initialize result, "" if
// it is not one.
func answeredRevision(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	v, _ := res["protocolVersion"].(string)
	return v
}

// httpSession is an initialized /mcp session driven by raw POSTs.
type httpSession struct {
	t        *testing.T
	p        *proc
	id       string
	revision string
}

// openHTTPSession initializes a session on p's /mcp.
func openHTTPSession(t *testing.T, p *proc) *httpSession {
	t.Helper()
	return openHTTPSessionAt(t, p, latestRevision)
}

// openHTTPSessionAt is openHTTPSession at revision, which the server must
// answer with; later requests carry it in Mcp-Protocol-Version. From
// statelessRevision on there is no session: the client discovers, and
// each request stands alone.
func openHTTPSessionAt(t *testing.T, p *proc, revision string) *httpSession {
	t.Helper()
	s := &httpSession{t: t, p: p, revision: revision}
	if revision >= statelessRevision {
		status, data, h := s.post(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":` + withMeta(revision, `{}`) + `}`)
		if status != 200 || h.Get("Mcp-Session-Id") != "" || !strings.Contains(string(data), `"supportedVersions":["`+revision+`"`) {
			t.Fatalf("server/discover at %s: %d %v %s", revision, status, h, data)
		}
		return s
	}
	status, data, h := s.post(initializeAt(revision))
	if s.id = h.Get("Mcp-Session-Id"); status != 200 || s.id == "" || !strings.Contains(string(data), `"protocolVersion":"`+revision+`"`) {
		t.Fatalf("initialize at %s: %d %s", revision, status, data)
	}
	if status, data, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("notifications/initialized: %d %s", status, data)
	}
	return s
}

// post sends one message in the session (once it has an id) and reads
// the whole answer.
func (s *httpSession) post(body string) (int, []byte, http.Header) {
	s.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + testToken}
	for k, v := range s.header(body) {
		h[k] = v
	}
	return s.p.do("POST", "/mcp", h, []byte(body))
}

// header is what the client sends beside body, the token aside. From
// statelessRevision on a request names its method (and what it calls) in
// headers; its body carries the revision in its _meta (withMeta).
func (s *httpSession) header(body string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": s.revision}
	if s.id != "" {
		h["Mcp-Session-Id"] = s.id
	}
	if s.revision >= statelessRevision {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		h["Mcp-Method"] = m.Method
		if m.Params.Name != "" {
			h["Mcp-Name"] = m.Params.Name
		}
	}
	return h
}
