package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// fixtureWorld is a broker with the guest fixture admitted as "fx", a local
// HTTP server for its fetches, and a "data" root with escape traps around
// it.
type fixtureWorld struct {
	p          *proc
	plugins    string
	web        *httptest.Server // allowlisted by IP literal
	webPort    string
	otherPort  string // a server that is not allowlisted
	closedPort string // allowlisted, nothing listening
	bounds     wire.Bounds
	// loop is descriptor "fxloop", which declares only the loop tool under
	// a short time bound. Every other tool is fx's, under a time bound that
	// no call reaches however loaded the machine, so a call ends by the
	// rule it tests (or is held by the test) and never by the clock.
	loop wire.Bounds
	// held receives one value per fetch of /hold, which then blocks until
	// release is closed: calls that the test holds in flight.
	held        chan struct{}
	release     chan struct{}
	releaseOnce sync.Once
}

// releaseHeld lets every held fetch, and any later one, complete.
func (w *fixtureWorld) releaseHeld() { w.releaseOnce.Do(func() { close(w.release) }) }

var guestTools = []string{"echo", "loop", "membomb", "trap", "exit3", "bigout", "nojson", "twojson", "notobject", "fail", "fetch", "fetchn", "readfile", "writefile", "sleep", "log", "stderr", "counter"}

// fxManifest declares every guest tool; readfile requires a string path so
// args-invalid can be provoked.
func fxManifest(id string, b wire.Bounds) plugins.Manifest { return fxManifestOf(id, b, guestTools...) }

// fxManifestOf declares only the named guest tools.
func fxManifestOf(id string, b wire.Bounds, tools ...string) plugins.Manifest {
	m := plugins.Manifest{ID: id, Version: "1.0.0", Module: "guest.wasm", Bounds: b}
	for _, name := range tools {
		schema := `{"type":"object"}`
		if name == "readfile" {
			schema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`
		}
		m.Tools = append(m.Tools, wire.Tool{Name: name, Description: "fixture " + name, InputSchema: json.RawMessage(schema)})
	}
	return m
}

func newFixtureWorld(t *testing.T, env ...string) *fixtureWorld {
	t.Helper()
	w := &fixtureWorld{plugins: t.TempDir(), held: make(chan struct{}, 64), release: make(chan struct{})}
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "other") }))
	t.Cleanup(other.Close)
	w.otherPort = portOf(other.URL)
	w.web = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect-out":
			http.Redirect(rw, r, other.URL+"/", http.StatusFound)
		case "/redirect-in":
			http.Redirect(rw, r, "/ok", http.StatusFound)
		case "/hold":
			w.held <- struct{}{}
			<-w.release
			fmt.Fprint(rw, "released")
		default:
			fmt.Fprint(rw, "hello from web")
		}
	}))
	t.Cleanup(w.web.Close)
	t.Cleanup(w.releaseHeld) // before the server's Close, which waits for its handlers
	w.webPort = portOf(w.web.URL)
	w.closedPort = closedPort(t)

	root := t.TempDir()
	data := filepath.Join(root, "data")
	must(t, os.Mkdir(data, 0o755))
	must(t, os.WriteFile(filepath.Join(data, "note.txt"), []byte("inside the root"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "secret.txt"), []byte("outside the root"), 0o644))
	must(t, os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(data, "escape")))

	w.bounds = wire.Bounds{
		TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096, MaxRequests: 2,
		AllowedHosts: []string{"127.0.0.1:" + w.webPort, "localhost:" + w.webPort, "127.0.0.1:" + w.closedPort},
		Roots:        []string{"data"},
	}
	must(t, plugins.WriteFolder(w.plugins, fxManifestOf("fx", w.bounds, slices.DeleteFunc(slices.Clone(guestTools), isLoop)...), testkit.Fixture(t, "guest.wasm")))
	w.loop = w.bounds
	w.loop.TimeoutMs = 1000
	must(t, plugins.WriteFolder(w.plugins, fxManifestOf("fxloop", w.loop, "loop"), testkit.Fixture(t, "guest.wasm")))
	w.p = startServe(t, procOptions{
		Args:    []string{"--plugins", w.plugins, "--root", "data=" + data, "--no-builtin"},
		Env:     append(tokenEnv(), env...),
		Secrets: []string{testToken},
	})
	return w
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func portOf(url string) string { return url[strings.LastIndex(url, ":")+1:] }

// closedPort is a loopback port where no server answers.
func closedPort(t *testing.T) string { return portOf(testkit.ResettingAddr(t)) }

func isLoop(tool string) bool { return tool == "loop" }

// call posts a call envelope with its admitted bounds, for descriptor
// fxloop when the tool is loop and fx otherwise.
func (w *fixtureWorld) call(t *testing.T, tool, args string) wire.Answer {
	t.Helper()
	descriptor, b := "fx", w.bounds
	if isLoop(tool) {
		descriptor, b = "fxloop", w.loop
	}
	a, err := tryPostCall(w.p, w.body(descriptor, b, tool, args))
	must(t, err)
	return a
}

func (w *fixtureWorld) body(descriptor string, b wire.Bounds, tool, args string) string {
	bounds, _ := json.Marshal(b)
	return fmt.Sprintf(`{"v":1,"callId":"c-%s","tool":%q,"descriptorId":%q,"args":%s,"boundsEcho":%s}`, tool, tool, descriptor, args, bounds)
}

// holdAsync starts a call of fx that fetches /hold, and returns once
// the fetch has reached the test's server: the call is then in flight
// until w.release is closed. wait, called from the test's goroutine,
// gives its answer.
func (w *fixtureWorld) holdAsync(t *testing.T) (wait func() wire.Answer) {
	t.Helper()
	type result struct {
		a   wire.Answer
		err error
	}
	done := make(chan result, 1)
	body := w.body("fx", w.bounds, "fetch", `{"url":"http://127.0.0.1:`+w.webPort+`/hold"}`)
	go func() {
		a, err := tryPostCall(w.p, body)
		done <- result{a, err}
	}()
	select {
	case <-w.held:
	case r := <-done:
		t.Fatalf("the held call ended before it reached /hold: %+v %v", r.a, r.err)
	}
	return func() wire.Answer {
		t.Helper()
		r := <-done
		must(t, r.err)
		return r.a
	}
}

// postCall sends a raw body to POST /v1/calls and parses the answer, which
// must be a valid envelope whatever the status.
func postCall(t *testing.T, p *proc, body string) wire.Answer {
	t.Helper()
	a, _ := postCallStatus(t, p, body)
	return a
}

func postCallStatus(t *testing.T, p *proc, body string) (wire.Answer, int) {
	t.Helper()
	a, code, err := tryPostCallStatus(p, body)
	must(t, err)
	return a, code
}

// tryPostCall and tryPostCallStatus return what postCall would fail the
// test with, for goroutines other than the test's.
func tryPostCall(p *proc, body string) (wire.Answer, error) {
	a, _, err := tryPostCallStatus(p, body)
	return a, err
}

func tryPostCallStatus(p *proc, body string) (wire.Answer, int, error) {
	code, data, _, err := p.tryDo("POST", "/v1/calls", map[string]string{"X-Tensorviz-Token": testToken}, []byte(body))
	if err != nil {
		return wire.Answer{}, code, err
	}
	a, err := wire.ParseAnswer(data)
	if err != nil {
		return a, code, fmt.Errorf("answer (%d) is not a valid envelope: %w\n%s", code, err, data)
	}
	return a, code, nil
}

func TestCallsEveryRuleEndToEnd(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	web := "http://127.0.0.1:" + w.webPort
	cases := []struct {
		name, tool, args string
		want             wire.Rule // "" for ok
		observed         string    // substring of observed when ok
	}{
		{"ok", "echo", `{"hello":"world"}`, "", `"hello":"world"`},
		{"exec-timeout", "loop", `{}`, wire.ExecTimeout, ""},
		{"memory-exhausted", "membomb", `{}`, wire.MemoryExhausted, ""},
		{"exec-threw trap", "trap", `{"kind":"nil"}`, wire.ExecThrew, ""},
		{"exec-threw panic", "trap", `{}`, wire.ExecThrew, ""},
		{"exec-threw exit 3", "exit3", `{}`, wire.ExecThrew, ""},
		{"exec-threw not json", "nojson", `{}`, wire.ExecThrew, ""},
		{"exec-threw two objects", "twojson", `{}`, wire.ExecThrew, ""},
		{"exec-threw not an object", "notobject", `{}`, wire.ExecThrew, ""},
		{"exec-threw tool error", "fail", `{}`, wire.ExecThrew, ""},
		{"output-too-large", "bigout", `{"n":5000}`, wire.OutputTooLarge, ""},
		{"output at the bound", "bigout", `{"n":4096}`, "", `"s":"xxx`},
		{"fetch ok", "fetch", `{"url":"` + web + `/ok"}`, "", "hello from web"},
		{"fetch redirect inside", "fetch", `{"url":"` + web + `/redirect-in"}`, "", "hello from web"},
		{"host-not-allowed", "fetch", `{"url":"http://127.0.0.1:` + w.otherPort + `/"}`, wire.HostNotAllowed, ""},
		{"host-not-allowed redirect", "fetch", `{"url":"` + web + `/redirect-out"}`, wire.HostNotAllowed, ""},
		{"host-not-allowed private by name", "fetch", `{"url":"http://localhost:` + w.webPort + `/ok"}`, wire.HostNotAllowed, ""},
		{"host-not-allowed scheme", "fetch", `{"url":"file:///etc/passwd"}`, wire.HostNotAllowed, ""},
		{"fetch-failed", "fetch", `{"url":"http://127.0.0.1:` + w.closedPort + `/"}`, wire.FetchFailed, ""},
		{"budget-exhausted", "fetchn", `{"url":"` + web + `/ok","n":3}`, wire.BudgetExhausted, ""},
		{"fetch within budget", "fetchn", `{"url":"` + web + `/ok","n":2}`, "", `"statuses":[200,200]`},
		{"args-invalid", "readfile", `{}`, wire.ArgsInvalid, ""},
		{"args-invalid extra", "readfile", `{"path":"/data/note.txt","mode":"w"}`, wire.ArgsInvalid, ""},
		{"unknown-tool", "rm_rf", `{}`, wire.UnknownTool, ""},
		{"root read", "readfile", `{"path":"/data/note.txt"}`, "", "inside the root"},
		{"root escape dotdot", "readfile", `{"path":"/data/../secret.txt"}`, wire.ExecThrew, ""},
		{"root escape relative", "readfile", `{"path":"../secret.txt"}`, wire.ExecThrew, ""},
		{"root escape absolute", "readfile", `{"path":"/etc/passwd"}`, wire.ExecThrew, ""},
		{"root escape symlink", "readfile", `{"path":"/data/escape"}`, wire.ExecThrew, ""},
		{"root is read-only", "writefile", `{"path":"/data/new.txt","text":"x"}`, wire.ExecThrew, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := w.call(t, c.tool, c.args)
			if a.CallID != "c-"+c.tool {
				t.Errorf("callId %q not echoed", a.CallID)
			}
			if c.want == "" {
				if !a.OK || !strings.Contains(string(a.Observed), c.observed) {
					t.Fatalf("want ok with %q, got %+v (observed %s)", c.observed, a, a.Observed)
				}
			} else if a.OK || a.Refused != c.want {
				t.Fatalf("want %s, got %+v (observed %s)", c.want, a, a.Observed)
			}
			if a.Budget == nil || a.Budget.RequestsLimit != 2 {
				t.Errorf("answer carries no budget of the descriptor: %+v", a.Budget)
			}
			if strings.Contains(a.Why, "outside the root") {
				t.Errorf("refusal text leaks file content")
			}
		})
	}
	if out, err := os.ReadFile(filepath.Join(filepath.Dir(w.plugins), "new.txt")); err == nil {
		t.Errorf("the guest wrote through a read-only root: %q", out)
	}

	t.Run("budget-exhausted carries the budget", func(t *testing.T) {
		a := w.call(t, "fetchn", `{"url":"`+web+`/ok","n":5}`)
		if a.Refused != wire.BudgetExhausted || *a.Budget != (wire.Budget{RequestsUsed: 2, RequestsLimit: 2}) {
			t.Fatalf("got %+v budget %+v", a, a.Budget)
		}
	})
	t.Run("bounds-mismatch", func(t *testing.T) {
		raised := w.bounds
		raised.MaxRequests = 100
		echo, _ := json.Marshal(raised)
		a := postCall(t, w.p, `{"v":1,"callId":"c","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":`+string(echo)+`}`)
		if a.Refused != wire.BoundsMismatch {
			t.Fatalf("got %+v", a)
		}
	})
	t.Run("unattributed-call", func(t *testing.T) {
		a := postCall(t, w.p, `{"v":1,"callId":"c","tool":"echo","descriptorId":"nope","args":{},"boundsEcho":{}}`)
		if a.Refused != wire.UnattributedCall {
			t.Fatalf("got %+v", a)
		}
	})
	t.Run("bodies that are not call envelopes", func(t *testing.T) {
		for body, want := range map[string]wire.Rule{
			`{"v":1,`: wire.Malformed,
			`{"v":1,"callId":"c","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{},"grant":"everything"}`: wire.UnknownField,
			`{"v":2,"callId":"c","tool":"echo","descriptorId":"fx","args":{},"boundsEcho":{}}`:                      wire.VersionMismatch,
			`{"v":1,"callId":"c","tool":"echo","descriptorId":"fx","args":[],"boundsEcho":{}}`:                      wire.Malformed,
		} {
			a, code := postCallStatus(t, w.p, body)
			if code != 400 || a.Refused != want {
				t.Errorf("%s: %d %+v, want 400 %s", body, code, a, want)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		m := scrape(t, w.p)
		for _, want := range []string{
			`airlock_tool_calls_total{descriptor="fx",outcome="ok",tool="echo"} 1`,
			`airlock_tool_calls_total{descriptor="fxloop",outcome="exec-timeout",tool="loop"} 1`,
			`airlock_tool_calls_total{descriptor="fx",outcome="memory-exhausted",tool="membomb"} 1`,
			`airlock_tool_calls_total{descriptor="fx",outcome="budget-exhausted",tool="fetchn"} 2`,
			`airlock_tool_calls_total{descriptor="fx",outcome="unknown-tool",tool="OTHER"} 1`,
			`airlock_tool_calls_total{descriptor="OTHER",outcome="unattributed-call",tool="OTHER"} 1`,
			`airlock_tool_calls_total{descriptor="OTHER",outcome="unknown-field",tool="OTHER"} 1`,
			`airlock_tool_timeouts_total{descriptor="fxloop",tool="loop"} 1`,
			`airlock_tool_fetch_requests_used_bucket{descriptor="fx",le="0"}`,
			`airlock_tool_call_duration_seconds_count{descriptor="fx",tool="echo"} 2` + "\n", // ok + bounds-mismatch
			`airlock_plugins_admitted 2`,
			`airlock_channel_calls_total{outcome="ok",peer="local"}`,
			`go_goroutines`, `process_resident_memory_bytes`,
		} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if strings.Contains(m, "rm_rf") || strings.Contains(m, `descriptor="nope"`) {
			t.Errorf("a caller-chosen name became a label value")
		}
		problems, err := promlint.New(strings.NewReader(m)).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	})
}

func TestCallsOverloaded(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t, "AIRLOCK_EXEC_MAX_CONCURRENT=1")
	held := w.holdAsync(t) // holds fx's one slot until released
	second := w.body("fx", w.bounds, "fetch", `{"url":"http://127.0.0.1:`+w.webPort+`/ok"}`)
	if a := postCall(t, w.p, second); a.Refused != wire.Overloaded {
		t.Fatalf("a call while the slot is held: %+v", a)
	}
	w.releaseHeld()
	if a := held(); !a.OK || !strings.Contains(string(a.Observed), "released") {
		t.Fatalf("the held call: %+v", a)
	}
	if a := postCall(t, w.p, second); !a.OK {
		t.Errorf("after the slot freed: %+v", a)
	}
}

// TestCallsDrainOnSIGTERM: calls in flight at SIGTERM finish and are
// answered; the broker then exits 0. The calls are held at the test's
// server until the broker has logged that it is draining, so they are in
// flight across the signal however slow the machine.
func TestCallsDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t, "AIRLOCK_SHUTDOWN_GRACE_MS=600000")
	answers := make([]func() wire.Answer, 3)
	for i := range answers {
		answers[i] = w.holdAsync(t)
	}
	must(t, w.p.cmd.Process.Signal(syscall.SIGTERM))
	// Draining has begun once /healthz says so or the listener is closed.
	testkit.Eventually(t, "the broker to begin draining", func() bool {
		_, data, _, err := w.p.tryDo("GET", "/healthz", nil, nil)
		return err != nil || strings.Contains(string(data), "draining")
	})
	w.releaseHeld()
	for i, wait := range answers {
		if a := wait(); !a.OK {
			t.Errorf("call %d in flight at SIGTERM: %+v", i, a)
		}
	}
	if code := w.p.Wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d after draining", code)
	}
	if !strings.Contains(w.p.Stderr(), `"stopped"`) {
		t.Errorf("stop not logged")
	}
}

func TestPluginDropInWithoutRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, procOptions{Args: []string{"--plugins", dir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096}
	must(t, plugins.WriteFolder(dir, fxManifest("dropped", b), testkit.Fixture(t, "guest.wasm")))
	echo, _ := json.Marshal(b)
	body := `{"v":1,"callId":"c","tool":"echo","descriptorId":"dropped","args":{"n":1},"boundsEcho":` + string(echo) + `}`
	testkit.Eventually(t, "the dropped-in plugin to answer", func() bool { return postCall(t, p, body).OK })

	os.RemoveAll(filepath.Join(dir, "dropped"))
	testkit.Eventually(t, "the removed plugin to be retired", func() bool { return postCall(t, p, body).Refused == wire.UnattributedCall })
	p.waitStderr("plugin retired")
}

func TestCLICallAndTools(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	// A broken plugin beside the good one: refused, shown, counted.
	broken := fxManifest("broken", w.bounds)
	must(t, plugins.WriteFolder(w.plugins, broken, []byte("not wasm at all")))
	testkit.Eventually(t, "the broken plugin to be refused", func() bool {
		return strings.Contains(w.p.Stderr(), `"msg":"plugin refused","plugin":"broken"`)
	})

	env := tokenEnv()
	code, out, errOut := runCLI(t, env, "call", "echo", "--broker", w.p.URL(), "--args", `{"x":1}`)
	if code != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"x": 1`) {
		t.Errorf("call echo: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, env, "call", "loop", "--broker", w.p.URL())
	if code != exitcode.Refused || !strings.Contains(out, `"refused": "exec-timeout"`) {
		t.Errorf("call loop: exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, env, "call", "nosuchtool", "--broker", w.p.URL())
	if code != exitcode.Failed || !strings.Contains(errOut, "nosuchtool") {
		t.Errorf("call of an unknown tool: exit %d %s", code, errOut)
	}
	code, _, errOut = runCLI(t, nil, "call", "echo", "--broker", w.p.URL())
	if code != exitcode.Usage || !strings.Contains(errOut, "TENSORVIZ_LOCAL_TOKEN") {
		t.Errorf("call without a token: exit %d %s", code, errOut)
	}

	code, out, _ = runCLI(t, env, "tools", "--broker", w.p.URL())
	if code != exitcode.Refused || !strings.Contains(out, "fx") || !strings.Contains(out, "local") ||
		!strings.Contains(out, "broken") || !strings.Contains(out, "compile-failed") {
		t.Errorf("tools --broker: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, nil, "tools", "--plugins", w.plugins, "--root", "data="+t.TempDir(), "--no-builtin", "--data", t.TempDir(), "--json")
	var listing struct {
		Descriptors []wire.Descriptor   `json:"descriptors"`
		Plugins     []wire.PluginStatus `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(out), &listing); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, out)
	}
	reasons := map[string]string{}
	for _, s := range listing.Plugins {
		reasons[s.ID] = s.Reason
	}
	if code != exitcode.Refused || len(listing.Descriptors) != 2 || reasons["fx"] != "" || reasons["broken"] != "compile-failed" {
		t.Errorf("tools --plugins: exit %d %v", code, reasons)
	}
	metrics := scrape(t, w.p)
	if !strings.Contains(metrics, `airlock_plugin_admission_failures_total{reason="compile-failed"} 1`) {
		t.Errorf("refusal not counted:\n%s", grep(metrics, "admission"))
	}
}
