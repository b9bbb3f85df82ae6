package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// Helpers of the executor-channel end-to-end tests: a broker and one or
// more `airlock env` processes on loopback, paired with `airlock pair add`.

// chanGraceMs is the brokers' channel.grace_ms in these tests.
const chanGraceMs = 300

// chanTools are the guest fixture's tools the channel tests use.
var chanTools = []string{"echo", "sleep", "fetch", "fetchn", "trap", "loop", "toolerror"}

// chanWorld is a broker with a data folder, a web server that tools may
// fetch from, and the bounds of the "fx" descriptor environments serve.
type chanWorld struct {
	t       *testing.T
	broker  *proc
	data    string
	web     *httptest.Server
	bounds  wire.Bounds // fx: quick calls
	slow    wire.Bounds // slow: long sleeps
	brokEnv []string
	closed  string       // an allowlisted host:port that resets every connection
	calls   atomic.Int64 // calls made (and answered) through call
}

func newChanWorld(t *testing.T, env ...string) *chanWorld {
	t.Helper()
	w := &chanWorld{t: t, data: t.TempDir()}
	w.web = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "hello") }))
	t.Cleanup(w.web.Close)
	webHost := strings.TrimPrefix(w.web.URL, "http://")
	w.closed = testkit.ResettingAddr(t)
	w.bounds = wire.Bounds{TimeoutMs: 2000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, MaxRequests: 2,
		AllowedHosts: []string{webHost, w.closed}, Roots: []string{}}
	w.slow = wire.Bounds{TimeoutMs: 60000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}
	w.brokEnv = append(append(tokenEnv(), "AIRLOCK_CHANNEL_GRACE_MS="+strconv.Itoa(chanGraceMs)), env...)
	w.startBroker()
	return w
}

// startBroker starts (or restarts) the broker on the world's data folder.
func (w *chanWorld) startBroker() {
	w.broker = startServe(w.t, procOptions{Args: []string{"--data", w.data, "--no-builtin", "--log-level", "debug"},
		Env: w.brokEnv, Secrets: []string{testToken}})
}

// pair runs `airlock pair add name` and returns the bearer, which must be
// the only thing on stdout.
func (w *chanWorld) pair(name string) string {
	w.t.Helper()
	code, out, errOut := runCLI(w.t, nil, "pair", "add", name, "--data", w.data)
	bearer := strings.TrimSuffix(out, "\n")
	if code != 0 || !strings.HasPrefix(bearer, "vbx_") || strings.Contains(bearer, "\n") || len(bearer) != 47 {
		w.t.Fatalf("pair add %s: exit %d, stdout %q, stderr %s", name, code, out, errOut)
	}
	if strings.Contains(errOut, bearer) {
		w.t.Fatal("pair add repeated the bearer on stderr")
	}
	w.broker.AddSecret(bearer)
	w.waitPairings()
	return bearer
}

// waitPairings waits until the broker has loaded the pairings file as it
// is now: it watches the file with a short debounce, so a peer that dials
// the instant `pair add` returns could otherwise be refused, correctly.
func (w *chanWorld) waitPairings() {
	w.t.Helper()
	_, out, _ := runCLI(w.t, nil, "pair", "ls", "--data", w.data)
	want := fmt.Sprintf(`"msg":"pairings loaded","pairings":%d}`, len(scanLines(strings.TrimSpace(out))))
	testkit.Eventually(w.t, "the broker to load the pairings file", func() bool {
		lines := scanLines(w.broker.Stderr())
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], `"msg":"pairings loaded"`) {
				return strings.HasSuffix(lines[i], want)
			}
		}
		return false
	})
}

func (w *chanWorld) unpair(name string) {
	w.t.Helper()
	if code, _, errOut := runCLI(w.t, nil, "pair", "rm", name, "--data", w.data); code != 0 {
		w.t.Fatalf("pair rm %s: exit %d %s", name, code, errOut)
	}
	w.waitPairings()
}

// chanPlugins writes a plugins folder serving the guest fixture (the
// reactor build) under each descriptor id with its bounds.
func chanPlugins(t *testing.T, descriptors map[string]wire.Bounds) string {
	t.Helper()
	module := testkit.Fixture(t, "guest-reactor.wasm")
	dir := t.TempDir()
	for id, b := range descriptors {
		m := plugins.Manifest{ID: id, Version: "1.0.0", Module: "guest.wasm", Bounds: b}
		for _, name := range chanTools {
			m.Tools = append(m.Tools, wire.Tool{Name: name, Description: "fixture " + name, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		if err := plugins.WriteFolder(dir, m, module); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startEnv starts `airlock env` against the broker with bearer read from a
// 0600 file, serving plugins.
func (w *chanWorld) startEnv(bearer, plugins string, env ...string) *proc {
	w.t.Helper()
	file := filepath.Join(w.t.TempDir(), "bearer")
	if err := os.WriteFile(file, []byte(bearer+"\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return start(w.t, []string{"env", "--broker", w.channelURL(), "--bearer-file", file, "--plugins", plugins,
		"--data", w.t.TempDir(), "--log-level", "debug"}, procOptions{Env: env, Secrets: []string{bearer, testToken}})
}

func (w *chanWorld) channelURL() string { return "ws://" + w.broker.Addr + "/channel" }

// call posts one call for descriptor with its bounds echoed.
func (w *chanWorld) call(id, descriptor string, b wire.Bounds, tool, args string) wire.Answer {
	w.t.Helper()
	a, err := w.tryCall(id, descriptor, b, tool, args)
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

// callAsync starts a call in a goroutine of its own. The returned wait,
// called from the test's goroutine, gives the answer and fails the test
// there (a goroutine other than the test's must not call t.Fatal).
func (w *chanWorld) callAsync(id, descriptor string, b wire.Bounds, tool, args string) (wait func() wire.Answer) {
	type result struct {
		a   wire.Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := w.tryCall(id, descriptor, b, tool, args)
		done <- result{a, err}
	}()
	return func() wire.Answer {
		w.t.Helper()
		r := <-done
		if r.err != nil {
			w.t.Fatal(r.err)
		}
		return r.a
	}
}

// tryCall is call without the test: any failure is returned.
func (w *chanWorld) tryCall(id, descriptor string, b wire.Bounds, tool, args string) (wire.Answer, error) {
	echo, _ := json.Marshal(b)
	body := fmt.Sprintf(`{"v":1,"callId":%q,"tool":%q,"descriptorId":%q,"args":%s,"boundsEcho":%s}`, id, tool, descriptor, args, echo)
	// The caller waits as long as the call may rightly take: its time
	// bound, and a minute past it for the answer's way back.
	within := time.Duration(b.TimeoutMs)*time.Millisecond + time.Minute
	code, data, _, err := w.broker.tryDoWithin(within, "POST", "/v1/calls", map[string]string{"X-Tensorviz-Token": testToken}, []byte(body))
	if err != nil {
		return wire.Answer{}, err
	}
	a, err := wire.ParseAnswer(data)
	if err != nil || code != 200 {
		return a, fmt.Errorf("POST /v1/calls: %d %s (%v)", code, data, err)
	}
	if a.CallID != id {
		return a, fmt.Errorf("callId %q came back as %q", id, a.CallID)
	}
	w.calls.Add(1)
	return a, nil
}

// waitServing waits until descriptor answers echo through the channel.
func (w *chanWorld) waitServing(descriptor string, b wire.Bounds) {
	w.t.Helper()
	testkit.Eventually(w.t, descriptor+" to answer through the channel", func() bool { return w.call("probe", descriptor, b, "echo", `{}`).OK })
}

// metric is the value of one sample of the broker's metrics, 0 when
// absent; labels are given as k="v" strings.
func (w *chanWorld) metric(name string, labels ...string) float64 {
	w.t.Helper()
	return metricValue(scrape(w.t, w.broker), name, labels...)
}

// sumMetric adds every sample of a counter.
func sumMetric(exposition, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			sum += v
		}
	}
	return sum
}

func metricValue(exposition, name string, labels ...string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if ok {
			v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			return v
		}
	}
	return 0
}

// tools lists the broker's descriptors by id with their executor.
func (w *chanWorld) tools() map[string]string {
	w.t.Helper()
	code, data, _ := w.broker.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil)
	var out struct{ Descriptors []wire.Descriptor }
	if code != 200 || json.Unmarshal(data, &out) != nil {
		w.t.Fatalf("GET /v1/tools: %d %s", code, data)
	}
	m := map[string]string{}
	for _, d := range out.Descriptors {
		m[d.DescriptorID] = d.Executor
	}
	return m
}

// wsPeer is a hand-written channel client run by the test.
type wsPeer struct {
	t    *testing.T
	conn *websocket.Conn
}

// dialChannel opens path on the broker with header, offering protocols.
func (w *chanWorld) dialChannel(path string, header http.Header, protocols ...string) *wsPeer {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+w.broker.Addr+path, &websocket.DialOptions{HTTPHeader: header, Subprotocols: protocols})
	if err != nil {
		w.t.Fatalf("dial %s: %v", path, err)
	}
	w.t.Cleanup(func() { _ = conn.CloseNow() })
	return &wsPeer{t: w.t, conn: conn}
}

func (p *wsPeer) send(frame []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = p.conn.Write(ctx, websocket.MessageText, frame)
}

// sendLarge writes a frame of tens of MiB, which takes a loaded machine
// far longer than send's bound (the library closes the connection when a
// write outlives its context), and fails the test if the write fails.
func (p *wsPeer) sendLarge(frame []byte) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := p.conn.Write(ctx, websocket.MessageText, frame); err != nil {
		p.t.Fatalf("writing a %d-byte frame: %v", len(frame), err)
	}
}

// read returns the next message, or the error that ended the connection.
func (p *wsPeer) read() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, data, err := p.conn.Read(ctx)
	return data, err
}

// nextCall reads the next call the broker sent.
func (p *wsPeer) nextCall() wire.Call {
	p.t.Helper()
	data, err := p.read()
	if err != nil {
		p.t.Fatalf("no call: %v", err)
	}
	c, err := wire.ParseCall(data)
	if err != nil {
		p.t.Fatalf("the broker sent an invalid call: %v", err)
	}
	return c
}

// wantClose reads until the broker closes and checks code and reason.
func (p *wsPeer) wantClose(code websocket.StatusCode, reason string) {
	p.t.Helper()
	for {
		_, err := p.read()
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !asCloseError(err, &ce) || ce.Code != code || ce.Reason != reason {
			p.t.Fatalf("connection ended with %v, want %d %q", err, code, reason)
		}
		return
	}
}

func asCloseError(err error, ce *websocket.CloseError) bool { return errors.As(err, ce) }
