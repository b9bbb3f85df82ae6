package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel/rtt"
	"github.com/airlock/airlock/broker/contract"
	relaybaseline "github.com/airlock/airlock/broker/relay/baseline"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// End-to-end runs of `airlock load` against a real broker. They check
// the report's structure and that work was done; never how fast.

const loadToken = "e2e-load-launch-token-5e0a7c1b3f"

// decodeReport decodes a --json report strictly into v: a key the
// report types do not know is a test failure.
func decodeReport(t *testing.T, stdout string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("the report is not the expected JSON: %v\n%s", err, stdout)
	}
}

// checkRatios wants every ratio present and positive.
func checkRatios(t *testing.T, r *load.Ratios) {
	t.Helper()
	if r == nil || r.Throughput <= 0 || r.P50 <= 0 || r.P99 <= 0 {
		t.Fatalf("ratios %+v", r)
	}
}

func TestLoadCallsE2E(t *testing.T) {
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Welcome\n\nA note to read.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + loadToken}
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notes}, Env: env, Secrets: []string{loadToken}})
	// The broker's compilation cache, which the baseline reuses.
	loadEnv := append(env, "AIRLOCK_EXEC_CACHE_DIR="+cacheDir)
	code, stdout, stderr := runCLI(t, loadEnv, "load", "calls", "--broker", p.URL(), "-c", "2", "-d", "2s", "--warmup", "200ms",
		"--root", "notes="+notes, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if stderr != "" || strings.Contains(stdout, loadToken) {
		t.Fatalf("--json should be quiet on stderr and never print the token; stderr:\n%s", stderr)
	}
	var r load.CallsReport
	decodeReport(t, stdout, &r)
	if r.Command != "calls" || r.Tool != "read_notes" || r.DescriptorID != "notes" || r.Concurrency != 2 || r.DurationSeconds != 2 || r.Interrupted {
		t.Fatalf("header %+v", r)
	}
	if r.Baseline == nil || r.BaselineSkipped != "" || !strings.Contains(r.Baseline.Label, "builtin:notes (reactor, fresh instance per call)") {
		t.Fatalf("baseline %+v, skipped %q", r.Baseline, r.BaselineSkipped)
	}
	for name, f := range r.Sides() {
		if f.Calls <= 0 || f.CallsPerSecond <= 0 || f.Seconds != 2 || !f.AllOK() {
			t.Errorf("%s: %+v", name, f)
		}
		if l := f.LatencyMs; l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
			t.Errorf("%s: latency %+v", name, l)
		}
	}
	checkRatios(t, r.Ratios)
}

// TestLoadCallsHTTPFloorE2E checks the third side of a reused-instance
// run: the baseline behind a bare net/http server in a process of its
// own, answering every call with a valid envelope; one floor serves
// every shape of the run.
func TestLoadCallsHTTPFloorE2E(t *testing.T) {
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Welcome\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + loadToken}
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notes}, Env: env, Secrets: []string{loadToken}})
	loadEnv := append(env, "AIRLOCK_EXEC_CACHE_DIR="+cacheDir)
	code, stdout, stderr := runCLI(t, loadEnv, "load", "calls", "--broker", p.URL(), "-c", "1,2", "-d", "1s", "--warmup", "200ms",
		"--root", "notes="+notes, "--reuse-instance", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var reps []load.CallsReport
	decodeReport(t, stdout, &reps)
	if len(reps) != 2 || reps[0].Concurrency != 1 || reps[1].Concurrency != 2 {
		t.Fatalf("%d reports, want -c 1 then -c 2", len(reps))
	}
	for _, r := range reps {
		if r.HTTPFloor == nil || !strings.Contains(r.HTTPFloor.Label, "bare net/http server in its own process") {
			t.Fatalf("-c %d: no bare HTTP side: %+v", r.Concurrency, r.HTTPFloor)
		}
		sides := 0
		for name, f := range r.Sides() {
			sides++
			if f.Calls <= 0 || !f.AllOK() {
				t.Errorf("-c %d: %s: %+v", r.Concurrency, name, f)
			}
		}
		if sides != 3 {
			t.Fatalf("-c %d: %d sides, want airlock, baseline and bare http", r.Concurrency, sides)
		}
		checkRatios(t, r.Ratios)
		checkRatios(t, r.HTTPFloorRatios)
	}
	if reps[0].HTTPFloor.Label != reps[1].HTTPFloor.Label {
		t.Errorf("each shape started its own floor (its pid is in the label):\n%s\n%s", reps[0].HTTPFloor.Label, reps[1].HTTPFloor.Label)
	}
	var r load.CallsReport

	// --http-floor=false leaves it out.
	code, stdout, stderr = runCLI(t, loadEnv, "load", "calls", "--broker", p.URL(), "-c", "1", "-d", "300ms", "--warmup", "0s",
		"--root", "notes="+notes, "--reuse-instance", "--http-floor=false", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	r = load.CallsReport{}
	decodeReport(t, stdout, &r)
	if r.HTTPFloor != nil || r.HTTPFloorRatios != nil || r.Baseline == nil {
		t.Fatalf("--http-floor=false: floor %+v, baseline %+v", r.HTTPFloor, r.Baseline)
	}
}

// TestLoadCallsTextE2E checks the report for people, the progress line
// and a skipped default baseline (no --root), on a short run.
func TestLoadCallsTextE2E(t *testing.T) {
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + loadToken}
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notes}, Env: env, Secrets: []string{loadToken}})
	code, stdout, stderr := runCLI(t, env, "load", "calls", "--broker", p.URL(), "--tool", "list_notes", "--args", "{}",
		"-c", "1", "-d", "3s", "--warmup", "0s")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"list_notes on " + p.URL(), "calls/s", `airlock outcomes: {"ok":`, "no baseline: the builtin:notes baseline needs", "add --root notes=DIR"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "load   1s:  airlock ") {
		t.Errorf("no progress line on stderr:\n%s", stderr)
	}
}

func TestLoadRelayE2E(t *testing.T) {
	p := startSessions(t)
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}
	code, stdout, stderr := runCLI(t, env, "load", "relay", "--broker", p.URL(), "--sessions", "2", "--views", "3",
		"-d", "2s", "--warmup", "200ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if stderr != "" || strings.Contains(stdout, sessionToken) {
		t.Fatalf("--json should be quiet on stderr and never print the token; stderr:\n%s", stderr)
	}
	var r load.RelayReport
	decodeReport(t, stdout, &r)
	if r.Command != "relay" || r.Sessions != 2 || r.Views != 3 || r.Window != load.RelayWindow || r.Interrupted || r.Baseline == nil {
		t.Fatalf("header %+v", r)
	}
	// The forwarder runs in a process of its own, as the broker does.
	if !strings.Contains(r.Baseline.Label, ", process ") {
		t.Errorf("baseline %q: not the forwarder's own process", r.Baseline.Label)
	}
	for name, f := range r.Sides() {
		if f.Deliveries <= 0 || f.MessagesSent <= 0 || f.DeliveriesPerSecond <= 0 || f.Seconds != 2 {
			t.Errorf("%s: %+v", name, f)
		}
		// The window keeps every view far from the broker's queue bound.
		if f.DroppedViews != 0 || f.Refusals != 0 || f.SendErrors != 0 {
			t.Errorf("%s: dropped %d (%v), refused %d, send errors %d (%s)", name, f.DroppedViews, f.Closes, f.Refusals, f.SendErrors, f.FirstError)
		}
		if l := f.LatencyMs; l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("%s: latency %+v", name, l)
		}
	}
	checkRatios(t, r.Ratios)
}

// TestLoadIdleE2E connects a few idle views to a real broker and to the
// bare forwarder, which `load idle` starts as a process of the same
// binary, and checks that both were measured; never how much memory.
func TestLoadIdleE2E(t *testing.T) {
	p := startSessions(t)
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}
	code, stdout, stderr := runCLI(t, env, "load", "idle", "--broker", p.URL(), "--sessions", "2", "--views", "3",
		"--settle", "0s", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if stderr != "" || strings.Contains(stdout, sessionToken) {
		t.Fatalf("--json should be quiet on stderr and never print the token; stderr:\n%s", stderr)
	}
	var r load.IdleReport
	decodeReport(t, stdout, &r)
	if r.Command != "idle" || r.Sessions != 2 || r.Views != 3 || r.Interrupted || r.Baseline == nil || r.Ratio == 0 {
		t.Fatalf("report %+v", r)
	}
	for name, f := range map[string]*load.IdleFigures{"airlock": &r.Airlock, "baseline": r.Baseline} {
		if f.Views != 6 || f.RSSBefore <= 0 || f.RSSAfter <= 0 || f.Source == "" {
			t.Errorf("%s: %+v", name, f)
		}
	}
	if r.Airlock.Source != "/metrics" || r.Airlock.Goroutines <= 0 || !strings.HasPrefix(r.Baseline.Source, "/proc/") {
		t.Errorf("sources: %+v, %+v", r.Airlock, r.Baseline)
	}
}

// TestLoadIdleNamesTheConnectionCap: views past the broker's connection
// cap are closed or refused, and `load idle` says that the cap stopped
// it and how to raise it, instead of a bare connection error.
func TestLoadIdleNamesTheConnectionCap(t *testing.T) {
	p := startSessions(t, "AIRLOCK_HTTP_MAX_CONNECTIONS=8")
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}
	code, _, stderr := runCLI(t, env, "load", "idle", "--broker", p.URL(), "--sessions", "1", "--views", "20", "--settle", "0s")
	if code == 0 || !strings.Contains(stderr, "the broker is at its connection cap (http.max_connections)") ||
		!strings.Contains(stderr, "AIRLOCK_HTTP_MAX_CONNECTIONS=N") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}

// floorSecret is the run's secret a test gives the floor processes it
// starts (startFloor).
const floorSecret = "e2e-floor-secret-0123456789abcdef0123456789abcdef"

// startFloor starts the hidden `airlock load` floor command args as a
// load run does (floorSecret on its stdin) and returns the URL it prints
// and ask, which writes a line to its stdin and reads its answer line.
func startFloor(tb testing.TB, args ...string) (url string, ask func(string) (string, error)) {
	tb.Helper()
	cmd := exec.Command(binPath, append([]string{"load"}, args...)...)
	stdin, err := cmd.StdinPipe()
	must(tb, err)
	stdout, err := cmd.StdoutPipe()
	must(tb, err)
	must(tb, cmd.Start())
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	_, err = io.WriteString(stdin, floorSecret+"\n")
	must(tb, err)
	lines := bufio.NewReader(stdout)
	line, err := lines.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		tb.Fatalf("the floor printed %q, %v", line, err)
	}
	return strings.TrimSpace(line), func(q string) (string, error) {
		if _, err := io.WriteString(stdin, q+"\n"); err != nil {
			return "", err
		}
		a, err := lines.ReadString('\n')
		return strings.TrimSuffix(a, "\n"), err
	}
}

// TestLoadFloorsRefuseStrangers is the attack on the floor processes a
// load run starts: another local process that finds the HTTP floor's port
// cannot read the operator's notes through it, cannot take the rtt
// echo's one connection, and cannot connect to the relay forwarder (to
// grow it with one huge frame); only requests with the run's secret (given
// on the child's stdin) are served, and the forwarder closes a socket that
// sends a message over the run's bound.
func TestLoadFloorsRefuseStrangers(t *testing.T) {
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Private\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	floor := func(t *testing.T, args ...string) string {
		url, _ := startFloor(t, args...)
		return url
	}
	post := func(url, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/calls", strings.NewReader(
			`{"v":1,"callId":"x","tool":"read_notes","descriptorId":"notes","args":{"path":"welcome.md"},"boundsEcho":{}}`))
		if token != "" {
			req.Header.Set(contract.TokenHeader, token)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	t.Run("http-floor", func(t *testing.T) {
		url, ask := startFloor(t, "http-floor", "--baseline", "builtin:notes", "--tool", "read_notes", "--root", "notes="+notes, "--cache-dir", cacheDir)
		for _, token := range []string{"", "wrong", floorSecret + "x", loadToken} {
			if code, body := post(url, token); code != http.StatusUnauthorized || strings.Contains(body, "Private") {
				t.Errorf("token %q: %d %q", token, code, body)
			}
		}
		if code, body := post(url, floorSecret); code != http.StatusOK || !strings.Contains(body, "Private") {
			t.Fatalf("the run's own request: %d %q", code, body)
		}
		// Over its stdin, which only the run holds, the floor answers an
		// envelope line with its answer line, and a cut one with why.
		if a, err := ask(`{"v":1,"callId":"p","tool":"read_notes","descriptorId":"notes","args":{"path":"welcome.md"},"boundsEcho":{}}`); err != nil ||
			!strings.Contains(a, `"callId":"p"`) || !strings.Contains(a, "Private") {
			t.Fatalf("an envelope on stdin: %q %v", a, err)
		}
		if a, err := ask(`{"v":1,"callId":`); err != nil || !strings.Contains(a, `"error":"the body is not a call envelope"`) {
			t.Fatalf("a cut envelope on stdin: %q %v", a, err)
		}
	})
	t.Run("rtt-echo", func(t *testing.T) {
		url := floor(t, "rtt-echo", "--answer-size", "16")
		ctx := context.Background()
		if _, err := rtt.Dial(ctx, url, nil, 16); err == nil {
			t.Fatal("a stranger's dial was admitted")
		}
		if _, err := rtt.Dial(ctx, url, load.SecretHeader("wrong"), 16); err == nil {
			t.Fatal("a dial with the wrong secret was admitted")
		}
		f, err := rtt.Dial(ctx, url, load.SecretHeader(floorSecret), 16)
		if err != nil {
			t.Fatalf("the run's own dial, after the strangers': %v", err)
		}
		defer f.Close()
		if err := f.RoundTrip(ctx, []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("forwarder", func(t *testing.T) {
		const maxMessage = 4096
		url := floor(t, "forwarder", "--max-message", strconv.Itoa(maxMessage))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ws := "ws" + strings.TrimPrefix(url, "http") + "/s0"
		dial := func(h http.Header) (*websocket.Conn, *http.Response, error) {
			return websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: h})
		}
		for _, h := range []http.Header{nil, load.SecretHeader("wrong"), load.SecretHeader(floorSecret + "x")} {
			if c, resp, err := dial(h); err == nil {
				c.CloseNow()
				t.Fatalf("a dial with %v was admitted", h)
			} else if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a dial with %v: %v, want 401", h, err)
			}
		}
		view, _, err := dial(load.SecretHeader(floorSecret))
		if err != nil {
			t.Fatalf("the run's own view, after the strangers': %v", err)
		}
		defer view.CloseNow()
		hostHeader := load.SecretHeader(floorSecret)
		hostHeader.Set("Origin", relaybaseline.HostOrigin)
		host, _, err := dial(hostHeader)
		if err != nil {
			t.Fatalf("the run's own host: %v", err)
		}
		defer host.CloseNow()
		// A message at the bound is forwarded (once the view is
		// registered: the first ones may precede it, and are dropped).
		within := []byte(strings.Repeat("a", maxMessage))
		got := make(chan error, 1)
		go func() {
			_, data, err := view.Read(ctx)
			if err == nil && string(data) != string(within) {
				err = fmt.Errorf("the view read %d bytes, not the host's %d", len(data), len(within))
			}
			got <- err
		}()
		forwarded := false
		for !forwarded {
			must(t, host.Write(ctx, websocket.MessageText, within))
			select {
			case err := <-got:
				must(t, err)
				forwarded = true
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("the message at the bound was never forwarded")
			}
		}
		// One byte over it closes the sender's socket, message too big,
		// before it is buffered.
		_ = host.Write(ctx, websocket.MessageText, append(within, 'a'))
		_, _, err = host.Read(ctx)
		if code := websocket.CloseStatus(err); code != websocket.StatusMessageTooBig {
			t.Fatalf("after a message over the bound the host read %v (close %d), want its socket closed 1009", err, code)
		}
	})
}

// TestLoadSteadyDrivesOnlyTheBroker: --steady measures the broker alone
// for the whole run, with no baseline and no ratio, so a dashboard sees a
// steady rate; and every session a relay run minted is ended when it
// ends, none left live.
func TestLoadSteadyDrivesOnlyTheBroker(t *testing.T) {
	notes := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notes, "welcome.md"), []byte("# Welcome\n"), 0o644))
	env := []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}
	p := startServe(t, procOptions{Args: []string{"--root", "notes=" + notes}, Env: env, Secrets: []string{sessionToken}})
	code, stdout, stderr := runCLI(t, env, "load", "calls", "--broker", p.URL(), "--steady", "-c", "2", "-d", "2s", "--warmup", "500ms", "--json")
	if code != 0 {
		t.Fatalf("load calls --steady: exit %d\n%s", code, stderr)
	}
	var c load.CallsReport
	decodeReport(t, stdout, &c)
	if c.Baseline != nil || c.HTTPFloor != nil || c.Ratios != nil || c.Airlock.Calls <= 0 || c.SliceSeconds != c.DurationSeconds {
		t.Fatalf("--steady ran a baseline or in turns: baseline %+v, floor %+v, ratios %+v, calls %d, slice %v s",
			c.Baseline, c.HTTPFloor, c.Ratios, c.Airlock.Calls, c.SliceSeconds)
	}
	if got := p.metric(t, `airlock_tool_calls_total{descriptor="notes",outcome="ok",tool="read_notes"}`); got < float64(c.Airlock.Calls) {
		t.Errorf("the broker counted %v calls, the run %d", got, c.Airlock.Calls)
	}
	code, stdout, stderr = runCLI(t, env, "load", "relay", "--broker", p.URL(), "--steady", "--sessions", "3", "--views", "2", "-d", "2s", "--warmup", "500ms", "--json")
	if code != 0 {
		t.Fatalf("load relay --steady: exit %d\n%s", code, stderr)
	}
	var r load.RelayReport
	decodeReport(t, stdout, &r)
	if r.Baseline != nil || r.Airlock.Deliveries <= 0 {
		t.Fatalf("relay --steady: baseline %+v, deliveries %d", r.Baseline, r.Airlock.Deliveries)
	}
	if live, tomb := p.metric(t, `airlock_sessions{state="live"}`), p.metric(t, `airlock_sessions{state="tombstone"}`); live != 0 || tomb != 3 {
		t.Errorf("after the run: %v sessions live, %v ended; want 0 and 3", live, tomb)
	}
	code, _, stderr = runCLI(t, env, "load", "calls", "--broker", p.URL(), "--steady", "--baseline", "builtin:notes")
	if code != 2 || !strings.Contains(stderr, "--steady drives only the broker") {
		t.Errorf("--steady with --baseline: exit %d, %s", code, stderr)
	}
}
