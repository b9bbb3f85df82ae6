package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestChannelCallThroughEnvironment: pair, connect, call a tool on the
// environment through POST /v1/calls and `airlock call`; runtime
// refusals come back unchanged with their budget.
func TestChannelCallThroughEnvironment(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("lab")
	data, err := os.ReadFile(w.data + "/.pairings.json")
	if err != nil || strings.Contains(string(data), bearer) {
		t.Fatalf("pairings file: %v (or it holds the bearer)", err)
	}
	if info, _ := os.Stat(w.data + "/.pairings.json"); info.Mode().Perm() != 0o600 {
		t.Errorf("pairings file mode %v", info.Mode())
	}
	env := w.startEnv(bearer, chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	if got := w.tools()["fx"]; got != "machine:lab" {
		t.Errorf("GET /v1/tools: fx is at %q", got)
	}
	a := w.call("c-echo", "fx", w.bounds, "echo", `{"hello":"world"}`)
	if !a.OK || string(a.Observed) != `{"hello":"world"}` || a.Budget == nil || a.Budget.RequestsLimit != 2 {
		t.Fatalf("echo: %+v", a)
	}
	code, out, errOut := runCLI(t, tokenEnv(), "call", "echo", "--broker", w.broker.URL(), "--args", `{"x":1}`)
	if code != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"x": 1`) {
		t.Errorf("airlock call: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, tokenEnv(), "tools", "--broker", w.broker.URL())
	if !strings.Contains(out, "machine:lab") {
		t.Errorf("airlock tools --broker (exit %d) does not show machine:lab:\n%s", code, out)
	}

	web := w.web.URL
	cases := []struct {
		tool, args string
		rule       wire.Rule
		used       int
	}{
		{"fetchn", `{"url":"` + web + `/","n":3}`, wire.BudgetExhausted, 2},
		{"fetch", `{"url":"http://127.0.0.2:1/"}`, wire.HostNotAllowed, 0},
		{"fetch", `{"url":"` + web + `/x"}`, "", 1},
		{"fetch", `{"url":"http://` + w.closed + `/"}`, wire.FetchFailed, 1},
		{"sleep", `{"ms":30000}`, wire.ExecTimeout, 0}, // the environment's own bound
		{"trap", `{}`, wire.ExecThrew, 0},
	}
	for _, c := range cases {
		a := w.call("c-"+c.tool, "fx", w.bounds, c.tool, c.args)
		if c.rule == "" {
			if !a.OK {
				t.Errorf("%s: %+v", c.tool, a)
			}
			continue
		}
		why := c.rule.Why()
		switch c.rule {
		case wire.BudgetExhausted:
			why = wire.BudgetWhy(w.bounds.MaxRequests)
		case wire.ExecTimeout:
			why = wire.TimeoutWhy(w.bounds.TimeoutMs)
		}
		if a.OK || a.Refused != c.rule || a.Why != why || a.Budget == nil ||
			*a.Budget != (wire.Budget{RequestsUsed: c.used, RequestsLimit: 2}) {
			data, _ := json.Marshal(a)
			t.Errorf("%s: want %s with budget %d/2 unchanged, got %s", c.tool, c.rule, c.used, data)
		}
	}
	m := scrape(t, w.broker)
	if metricValue(m, "airlock_channel_calls_total", `outcome="budget-exhausted"`, `peer="machine"`) != 1 ||
		metricValue(m, "airlock_channel_peers", `peer="machine"`) != 1 ||
		metricValue(m, "airlock_channel_inflight", `peer="machine"`) != 0 {
		t.Errorf("channel metrics:\n%s", grep(m, "airlock_channel"))
	}
	if strings.Contains(m, `"lab"`) || strings.Contains(m, "machine:lab") {
		t.Error("a pairing name appears in a metric label")
	}
	testkit.Eventually(t, "the environment's connected event", func() bool {
		return strings.Contains(env.stdout.String(), `"event":"connected"`)
	})
}

// TestChannelMachineUnreachable: a call for the descriptor of an
// environment that is not connected is refused at once, whether it left
// or never connected since the broker started; `pair rm` forgets it.
func TestChannelMachineUnreachable(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	env := w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	env.Stop() // SIGTERM: drains and exits 0
	testkit.Eventually(t, "the machine peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="machine"`) == 0 })
	a := w.call("gone", "fx", w.bounds, "echo", `{}`)
	if a.Refused != wire.MachineUnreachable || a.Budget != nil {
		t.Fatalf("after the environment left: %+v", a)
	}

	w.broker.Stop()
	w.startBroker() // the environment has not connected to this broker
	if got := w.tools()["fx"]; got != "machine:lab" {
		t.Fatalf("the remembered catalog is not listed: %q", got)
	}
	if a := w.call("never", "fx", w.bounds, "echo", `{}`); a.Refused != wire.MachineUnreachable {
		t.Fatalf("environment not started: %+v", a)
	}
	if n := w.metric("airlock_channel_calls_total", `outcome="machine-unreachable"`, `peer="machine"`); n != 1 {
		t.Errorf("machine-unreachable counted %v", n)
	}
	w.unpair("lab")
	testkit.Eventually(t, "the unpaired environment to be unrouted", func() bool { return w.call("rm", "fx", w.bounds, "echo", `{}`).Refused == wire.UnattributedCall })
}

// TestChannelStalledEnvironment: an environment that stops answering (its
// process stopped) leaves calls to settle machine-timeout after timeoutMs
// plus the grace; its late answer settles nothing.
func TestChannelStalledEnvironment(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	env := w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	env.Suspend()
	stopped := true
	defer func() {
		if stopped {
			_ = env.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	a := w.call("stalled", "fx", w.bounds, "echo", `{}`)
	if a.Refused != wire.MachineTimeout {
		t.Fatalf("stalled environment: %+v", a)
	}
	if n := w.metric("airlock_channel_timeouts_total", `peer="machine"`); n != 1 {
		t.Errorf("channel timeouts %v", n)
	}
	must(t, env.cmd.Process.Signal(syscall.SIGCONT))
	stopped = false
	testkit.Eventually(t, "the late answer rejected as unknown-call", func() bool {
		return w.metric("airlock_channel_frames_rejected_total", `reason="unknown-call"`) == 1
	})
	if a := w.call("again", "fx", w.bounds, "echo", `{}`); !a.OK {
		t.Errorf("after resuming: %+v", a)
	}
	if n := w.metric("airlock_channel_inflight", `peer="machine"`); n != 0 {
		t.Errorf("inflight %v", n)
	}
}

// TestChannelKilledWithCallsInFlight: every call in flight when the
// environment dies settles machine-closed, and none is left pending.
func TestChannelKilledWithCallsInFlight(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	env := w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"slow": w.slow}))
	w.waitServing("slow", w.slow)
	const k = 6
	answers := make([]func() wire.Answer, k)
	for i := range k {
		answers[i] = w.callAsync(fmt.Sprint("k", i), "slow", w.slow, "sleep", `{"ms":50000}`)
	}
	testkit.Eventually(t, "every call in flight at the machine", func() bool { return w.metric("airlock_channel_inflight", `peer="machine"`) == k })
	env.Kill()
	for _, wait := range answers {
		if a := wait(); a.Refused != wire.MachineClosed {
			t.Errorf("call in flight at the kill: %+v", a)
		}
	}
	m := scrape(t, w.broker)
	if metricValue(m, "airlock_channel_inflight", `peer="machine"`) != 0 || metricValue(m, "airlock_channel_peers", `peer="machine"`) != 0 ||
		metricValue(m, "airlock_channel_calls_total", `outcome="machine-closed"`, `peer="machine"`) != k {
		t.Errorf("after the kill:\n%s", grep(m, "airlock_channel"))
	}
}

// TestChannelBadAnswers: an environment written by hand that answers with
// malformed, unknown-field, version-mismatch and unattributed frames never
// settles a call; it ends machine-timeout.
func TestChannelBadAnswers(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("fake")
	// The time bound leaves the broker ample time to reject every frame
	// before the call times out, so each is counted under its own reason.
	b := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 1, MaxOutputBytes: 1024, AllowedHosts: []string{}, Roots: []string{}}
	d := wire.Descriptor{DescriptorID: "fake", Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}, Bounds: b}
	p := w.dialChannel("/channel", nil)
	p.send(wire.HelloFrame(bearer))
	p.send(wire.CatalogFrame([]wire.Descriptor{d}))
	testkit.Eventually(t, "fake routed to machine:fake", func() bool { return w.tools()["fake"] == "machine:fake" })
	result := w.callAsync("bad", "fake", b, "echo", `{}`)
	c := p.nextCall()
	if c.CallID == "bad" || !strings.HasPrefix(c.CallID, "b_") {
		t.Errorf("the broker did not use its own callId: %q", c.CallID)
	}
	for _, f := range []string{
		`{"v":1,"callId":"` + c.CallID + `","ok":true}`,                                          // malformed: no observed
		`{"v":1,"callId":"` + c.CallID + `","ok":"yes","observed":{}}`,                           // malformed: ok not boolean
		`{"v":1,"callId":"` + c.CallID + `","ok":true,"observed":{},"decision":"allow"}`,         // unknown-field
		`{"v":2,"callId":"` + c.CallID + `","ok":true,"observed":{}}`,                            // version-mismatch
		`{"v":1,"callId":"bad","ok":true,"observed":{}}`,                                         // the caller's id: unattributed
		`{"v":1,"callId":"b_999999999","ok":true,"observed":{}}`,                                 // unattributed
		`{"v":1,"callId":"` + c.CallID + `","ok":false,"refused":"allow\tall","why":"trust me"}`, // malformed rule
	} {
		p.send([]byte(f))
	}
	testkit.Eventually(t, "seven bad frames rejected", func() bool {
		return sumMetric(scrape(t, w.broker), "airlock_channel_frames_rejected_total") >= 7
	})
	a := result()
	if a.Refused != wire.MachineTimeout {
		t.Fatalf("a bad frame settled the call: %+v", a)
	}
	m := scrape(t, w.broker)
	for reason, want := range map[string]float64{"malformed": 3, "unknown-field": 1, "version-mismatch": 1, "unknown-call": 2} {
		if got := metricValue(m, "airlock_channel_frames_rejected_total", `reason="`+reason+`"`); got != want {
			t.Errorf("frames rejected %s: %v, want %v", reason, got, want)
		}
	}
	if strings.Contains(w.broker.Stderr(), "trust me") || strings.Contains(w.broker.Stderr(), `allow\tall`) {
		t.Error("a rejected frame's content reached the log")
	}
	// A valid answer still works on the same connection.
	result = w.callAsync("good", "fake", b, "echo", `{}`)
	c = p.nextCall()
	p.send(wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{"fine":true}`), nil)))
	if a := result(); !a.OK || a.CallID != "good" {
		t.Errorf("valid answer: %+v", a)
	}
}

// TestChannelAuthAttacksEndToEnd: refusals against the real broker; each
// closed 1008 with its reason and never attached.
func TestChannelAuthAttacksEndToEnd(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_HELLO_BOUND_MS=400")
	bearer := w.pair("lab")
	env := w.startEnv(bearer, chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	env.Stop()
	testkit.Eventually(t, "the machine peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="machine"`) == 0 })
	revoked := w.pair("old")
	w.unpair("old")
	testkit.Eventually(t, "the catalog accepted in the broker log", func() bool { return strings.Contains(w.broker.Stderr(), `"msg":"catalog accepted"`) })

	offByOne := []byte(bearer)
	offByOne[10] ^= 1
	claim := wire.CatalogFrame([]wire.Descriptor{{DescriptorID: "fx", Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}, Bounds: w.bounds}})
	cases := []struct {
		name   string
		header http.Header
		hello  []byte
		reason string
	}{
		{"no hello", nil, nil, "executor-unauthenticated"},
		{"malformed hello", nil, []byte(`{"type":"hello","role":"environment","bearer":"` + bearer), "executor-unauthenticated"},
		{"wrong role", nil, []byte(`{"type":"hello","role":"page","bearer":"` + bearer + `"}`), "executor-unauthenticated"},
		{"extra key", nil, []byte(`{"type":"hello","role":"environment","bearer":"` + bearer + `","grant":"all"}`), "executor-unauthenticated"},
		{"bearer one character off", nil, wire.HelloFrame(string(offByOne)), "bearer-refused"},
		{"revoked bearer", nil, wire.HelloFrame(revoked), "bearer-refused"},
		{"foreign origin with a bearer one character off", http.Header{"Origin": {"http://evil.example"}}, wire.HelloFrame(string(offByOne)), "bearer-refused"},
		{"loopback origin of another port with a valid bearer", http.Header{"Origin": {"http://127.0.0.1:1"}}, wire.HelloFrame(bearer), "executor-unauthenticated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.metric("airlock_auth_refusals_total", `code="`+c.reason+`"`, `endpoint="channel"`)
			p := w.dialChannel("/channel", c.header)
			if c.hello != nil {
				p.send(c.hello)
			}
			p.send(claim)
			p.wantClose(websocket.StatusPolicyViolation, c.reason)
			if got := w.metric("airlock_auth_refusals_total", `code="`+c.reason+`"`, `endpoint="channel"`); got != before+1 {
				t.Errorf("auth refusals %s: %v → %v", c.reason, before, got)
			}
			if a := w.call("probe", "fx", w.bounds, "echo", `{}`); a.Refused != wire.MachineUnreachable {
				t.Errorf("the attacker was attached: %+v", a)
			}
		})
	}
	// Late hello: sent after the bound has fired.
	unauthenticated := func() float64 {
		return w.metric("airlock_auth_refusals_total", `code="executor-unauthenticated"`, `endpoint="channel"`)
	}
	before := unauthenticated()
	p := w.dialChannel("/channel", nil)
	testkit.Eventually(t, "the unauthenticated connection counted", func() bool { return unauthenticated() == before+1 })
	p.send(wire.HelloFrame(bearer))
	p.send(claim)
	p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
	if a := w.call("probe", "fx", w.bounds, "echo", `{}`); a.Refused != wire.MachineUnreachable {
		t.Errorf("the late hello was attached: %+v", a)
	}
	if n := w.metric("airlock_channel_peers", `peer="machine"`); n != 0 {
		t.Errorf("peers %v", n)
	}
}

// TestChannelRevokedWhileConnected: `pair rm` closes the live connection
// 1008 bearer-refused, its calls settle machine-closed, and the
// environment cannot come back with that bearer: it stops with one ERROR
// line and exit 3 instead of retrying for ever.
func TestChannelRevokedWhileConnected(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	env := w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"slow": w.slow}), "AIRLOCK_ENV_BACKOFF_MAX_MS=200")
	w.waitServing("slow", w.slow)
	answer := w.callAsync("inflight", "slow", w.slow, "sleep", `{"ms":50000}`)
	testkit.Eventually(t, "one call in flight at the machine", func() bool { return w.metric("airlock_channel_inflight", `peer="machine"`) == 1 })
	w.unpair("lab")
	if a := answer(); a.Refused != wire.MachineClosed {
		t.Fatalf("call in flight at the revocation: %+v", a)
	}
	// The environment does not try the refused bearer again (a hello with
	// it is refused and counted: TestChannelAuthAttacksEndToEnd).
	testkit.Eventually(t, "the environment told bearer-refused", func() bool {
		return strings.Contains(env.stdout.String(), `"reason":"bearer-refused"`)
	})
	if a := w.call("after", "slow", w.slow, "echo", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("after revocation: %+v", a)
	}
	if code := env.Wait(time.Minute); code != exitcode.Refused {
		t.Errorf("the refused environment exited %d, want %d", code, exitcode.Refused)
	}
	var stopped []string
	for _, line := range scanLines(env.Stderr()) {
		if strings.Contains(line, `"level":"ERROR"`) {
			stopped = append(stopped, line)
		}
	}
	if len(stopped) != 1 || !strings.Contains(stopped[0], "bearer-refused") || !strings.Contains(stopped[0], "airlock pair add") {
		t.Errorf("want one ERROR line naming bearer-refused and the fix, got %q", stopped)
	}
	if strings.Contains(env.Stderr(), `"msg":"reconnecting"`) {
		t.Errorf("the environment retried a refused bearer:\n%s", env.Stderr())
	}
}

// TestChannelEnvironmentDrainsOnSIGTERM: the call running at SIGTERM
// finishes; the environment exits 0.
func TestChannelEnvironmentDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	env := w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"slow": w.slow}))
	w.waitServing("slow", w.slow)
	answer := w.callAsync("long", "slow", w.slow, "sleep", `{"ms":1500}`)
	testkit.Eventually(t, "one call in flight at the machine", func() bool { return w.metric("airlock_channel_inflight", `peer="machine"`) == 1 })
	must(t, env.cmd.Process.Signal(syscall.SIGTERM))
	if a := answer(); !a.OK {
		t.Errorf("the call running at SIGTERM: %+v", a)
	}
	if code := env.Wait(60 * time.Second); code != 0 {
		t.Errorf("env exited %d", code)
	}
	if !strings.Contains(env.Stderr(), `"msg":"draining"`) || !strings.Contains(env.stdout.String(), `"code":1000`) {
		t.Errorf("drain not visible:\n%s\n%s", env.stdout.String(), env.Stderr())
	}
}

// TestChannelPageExecutor: a page over a real WebSocket with a loopback
// Origin and, with VOICEBOX_LOOPBACK_AUTH=1, a live view cookie minted and
// bootstrapped through the session API. The newer page is sent calls for
// the catalog it announces itself, and once the last page has left its
// descriptor is refused no-page.
func TestChannelPageExecutor(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_LOOPBACK_AUTH=1")
	origin := w.broker.URL()
	pd := wire.Descriptor{DescriptorID: "pg", Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}, Bounds: w.slow}
	if a := w.call("c0", "pg", w.slow, "echo", `{}`); a.Refused != wire.UnattributedCall {
		t.Fatalf("before any page: %+v", a)
	}
	// Without the cookie a loopback page is refused.
	p := w.dialChannel("/local/channel", http.Header{"Origin": {origin}})
	p.send(wire.CatalogFrame([]wire.Descriptor{pd}))
	p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
	p = w.dialChannel("/local/channel", http.Header{"Origin": {origin}, "Cookie": {"tensorviz_local_browser_0000000000000000=forged"}})
	p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")

	pass := chanViewCookie(t, w, origin)
	page := func() *wsPeer { return w.pageWith(pass) }
	a := page()
	a.send(wire.CatalogFrame([]wire.Descriptor{pd}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	inflight := w.callAsync("c1", "pg", w.slow, "echo", `{}`)
	a.nextCall()
	b := page()
	a.wantClose(websocket.StatusNormalClosure, "page-replaced")
	if got := inflight(); got.Refused != wire.PageClosed {
		t.Errorf("call of the replaced page: %+v", got)
	}
	// pgb is listed once b's catalog, which also holds pg, is accepted.
	b.send(wire.CatalogFrame([]wire.Descriptor{pd, pageDesc("pgb", w.slow)}))
	testkit.Eventually(t, "b's catalog to be accepted", func() bool { return w.tools()["pgb"] == "page" })
	inflight = w.callAsync("c2", "pg", w.slow, "echo", `{"n":2}`)
	c := b.nextCall()
	b.send(wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{"from":"page"}`), nil)))
	if got := inflight(); !got.OK || string(got.Observed) != `{"from":"page"}` {
		t.Errorf("call to the newer page: %+v", got)
	}
	inflight = w.callAsync("c3", "pg", w.slow, "echo", `{}`)
	b.nextCall()
	_ = b.conn.Close(websocket.StatusNormalClosure, "")
	if got := inflight(); got.Refused != wire.PageClosed {
		t.Errorf("call in flight when the page left: %+v", got)
	}
	testkit.Eventually(t, "the page peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })
	if got := w.call("c4", "pg", w.slow, "echo", `{}`); got.Refused != wire.NoPage {
		t.Errorf("with no page: %+v", got)
	}
	if n := w.metric("airlock_auth_refusals_total", `code="executor-unauthenticated"`, `endpoint="channel"`); n != 2 {
		t.Errorf("refusals %v", n)
	}
}

// chanViewCookie mints a session for origin and bootstraps its view
// cookie and key with the session client.
func chanViewCookie(t *testing.T, w *chanWorld, origin string) *localclient.ViewPass {
	t.Helper()
	return chanViewCookieFor(t, w, localclient.MintOptions{LaunchOrigin: origin})
}

// chanViewCookieFor is chanViewCookie for a session minted with o.
func chanViewCookieFor(t *testing.T, w *chanWorld, o localclient.MintOptions) *localclient.ViewPass {
	t.Helper()
	origin := o.LaunchOrigin
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &localclient.Client{Base: w.broker.URL(), Token: testToken}
	m, err := c.Mint(ctx, o)
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	w.broker.AddSecret(m.ViewCredential)
	w.broker.AddSecret(m.HostCookieKey)
	pass, _, err := c.Bootstrap(ctx, origin, m.WorkspaceSessionID, m.ViewCredential)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	w.broker.AddSecret(pass.Cookie.Value)
	w.broker.AddSecret(pass.Key)
	return pass
}

// TestChannelRoutingRule: two environments advertising the same
// descriptor: the pairing name first in byte order wins, whichever
// connected first; the other is listed nowhere.
func TestChannelRoutingRule(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	plugins := chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds})
	beta := w.startEnv(w.pair("beta"), plugins)
	w.waitServing("fx", w.bounds)
	if got := w.tools()["fx"]; got != "machine:beta" {
		t.Fatalf("fx at %q", got)
	}
	w.startEnv(w.pair("alpha"), plugins)
	testkit.Eventually(t, "fx routed to machine:alpha", func() bool { return w.tools()["fx"] == "machine:alpha" })
	testkit.Eventually(t, "the shadowed descriptor logged", func() bool { return strings.Contains(w.broker.Stderr(), "descriptor shadowed") })
	beta.Kill()
	if a := w.call("c", "fx", w.bounds, "echo", `{}`); !a.OK {
		t.Errorf("alpha's fx: %+v", a)
	}
}

// TestChannelChaos: calls flow continuously while environments are killed
// and restarted and a pairing is revoked and renewed. Every call settles
// once with an answer or a named peer-absence refusal, and nothing is left
// pending.
func TestChannelChaos(t *testing.T) {
	t.Parallel()
	rounds, callers := 6, 6
	if testing.Short() {
		rounds, callers = 2, 3
	}
	w := newChanWorld(t)
	pa := chanPlugins(t, map[string]wire.Bounds{"ga": w.bounds})
	pb := chanPlugins(t, map[string]wire.Bounds{"gb": w.bounds})
	bearerA := w.pair("a")
	envA := w.startEnv(bearerA, pa, "AIRLOCK_ENV_BACKOFF_MAX_MS=200")
	bearerB := w.pair("b")
	envB := w.startEnv(bearerB, pb, "AIRLOCK_ENV_BACKOFF_MAX_MS=200")
	w.waitServing("ga", w.bounds)
	w.waitServing("gb", w.bounds)
	before, callsBefore := scrape(t, w.broker), w.calls.Load()

	// shutting-down: an environment that drains (SIGTERM) answers new
	// calls shutting-down, as documented; env B, revoked, stops by itself
	// instead, and env A is killed, so this is a margin.
	// exec-timeout: an environment starved of CPU by the chaos (and by a
	// loaded machine) may meet its own time bound; that call still
	// settles exactly once, which is what this test is about.
	// overloaded: a call the broker settled machine-timeout on a loaded
	// machine still runs on the environment (a /channel call has no
	// cancel frame), so a new one may find its exec.max_concurrent full;
	// it too settles exactly once.
	allowed := map[wire.Rule]bool{wire.MachineUnreachable: true, wire.MachineClosed: true, wire.MachineTimeout: true,
		wire.UnattributedCall: true, wire.ShuttingDown: true, wire.ExecTimeout: true, wire.Overloaded: true}
	var mu sync.Mutex
	outcomes := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := []string{"ga", "gb"}[i%2]
				tool, args := "echo", fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				if i%3 == 0 {
					tool, args = "sleep", `{"ms":150}`
				}
				a, err := w.tryCall(fmt.Sprintf("g%d", g), id, w.bounds, tool, args)
				if err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
					return
				}
				key := "ok"
				if !a.OK {
					key = string(a.Refused)
					if !allowed[a.Refused] {
						t.Errorf("unexpected refusal %s", a.Refused)
					}
					time.Sleep(5 * time.Millisecond) // refusals are instant; keep the mix readable
				} else if tool == "echo" && string(a.Observed) != args {
					t.Errorf("call %s answered with %s", args, a.Observed)
				}
				mu.Lock()
				outcomes[id+" "+key]++
				mu.Unlock()
			}
		}()
	}
	for r := range rounds {
		// Both environments serve again, calls in flight, then the chaos.
		w.waitServing("ga", w.bounds)
		w.waitServing("gb", w.bounds)
		time.Sleep(200 * time.Millisecond)
		envA.Kill()
		envA = w.startEnv(bearerA, pa, "AIRLOCK_ENV_BACKOFF_MAX_MS=200")
		if r%2 == 0 {
			w.unpair("b")
			// Its bearer refused, the environment stops by itself (exit 3).
			if code := envB.Wait(time.Minute); code != exitcode.Refused {
				t.Errorf("the unpaired environment exited %d", code)
			}
			bearerB = w.pair("b")
			envB = w.startEnv(bearerB, pb, "AIRLOCK_ENV_BACKOFF_MAX_MS=200")
		} else {
			envB.Kill()
			envB = w.startEnv(bearerB, pb, "AIRLOCK_ENV_BACKOFF_MAX_MS=200")
		}
	}
	close(stop)
	wg.Wait()
	w.waitServing("ga", w.bounds)
	w.waitServing("gb", w.bounds)
	after, callsAfter := scrape(t, w.broker), w.calls.Load()

	total := 0
	for _, n := range outcomes {
		total += n
	}
	// Each call settled exactly once: the broker counted as many calls as
	// the test made and got answers for. A revoked pairing's catalog is
	// forgotten and its descriptor's series deleted, so the per-descriptor
	// family loses history; the per-peer family (every routed call) plus
	// the calls no route took (unattributed-call) keep the whole count.
	routed := func(e string) float64 {
		return sumMetric(e, "airlock_channel_calls_total") +
			metricValue(e, "airlock_tool_calls_total", `descriptor="OTHER"`, `outcome="unattributed-call"`)
	}
	counted := routed(after) - routed(before)
	if counted != float64(callsAfter-callsBefore) {
		t.Errorf("the broker counted %v calls, the test made %d", counted, callsAfter-callsBefore)
	}
	if metricValue(after, "airlock_channel_inflight", `peer="machine"`) != 0 {
		t.Errorf("calls left pending:\n%s", grep(after, "inflight"))
	}
	if metricValue(after, "airlock_channel_peers", `peer="machine"`) != 2 {
		t.Errorf("peers:\n%s", grep(after, "airlock_channel_peers"))
	}
	t.Logf("%d calls over %d rounds: %v", total, rounds, outcomes)
	if outcomes["ga ok"] == 0 || outcomes["gb ok"] == 0 {
		t.Errorf("no call got through: %v", outcomes)
	}
}
