package channel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestEnvironmentCallAndRuntimeRefusals: calls reach the environment with
// the broker's own callId and come back with the caller's, runtime
// refusals unchanged with their budget.
func TestEnvironmentCallAndRuntimeRefusals(t *testing.T) {
	w := newWorld(t, nil)
	d := desc("labtool", 60000)
	d.Bounds.MaxRequests = 2 // the budget the environment reports agrees with it
	env := w.env(w.pair("lab")).catalog(d).answering(func(c wire.Call) []byte {
		var in struct{ Refuse wire.Rule }
		_ = json.Unmarshal(c.Args, &in)
		b := &wire.Budget{RequestsUsed: 2, RequestsLimit: 2}
		if in.Refuse != "" {
			return wire.AnswerFrame(wire.Answer{V: 1, CallID: c.CallID, Refused: in.Refuse, Why: "peer's own words", Budget: b})
		}
		return wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{"id":"`+c.CallID+`"}`), b))
	})
	_ = env
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	a := w.call("reused", "labtool", "t", `{}`)
	var obs struct{ ID string }
	_ = json.Unmarshal(a.Observed, &obs)
	if !a.OK || a.CallID != "reused" || !strings.HasPrefix(obs.ID, "b_") || a.Budget == nil || a.Budget.RequestsUsed != 2 {
		t.Fatalf("answer %+v (observed %s)", a, a.Observed)
	}
	for _, r := range []wire.Rule{wire.HostNotAllowed, wire.FetchFailed, wire.BudgetExhausted, wire.ExecThrew, wire.Overloaded} {
		a := w.call("r", "labtool", "t", `{"refuse":"`+string(r)+`"}`)
		if a.Refused != r || a.Why != "peer's own words" || a.Budget == nil || *a.Budget != (wire.Budget{RequestsUsed: 2, RequestsLimit: 2}) {
			t.Errorf("%s arrived as %+v", r, a)
		}
	}
}

// TestEnvironmentTimeout: an environment that never answers settles
// machine-timeout after timeoutMs plus the grace.
func TestEnvironmentTimeout(t *testing.T) {
	w := newWorld(t, nil)
	env := w.env(w.pair("lab")).catalog(desc("labtool", 50))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	wantRule(t, w.call("c", "labtool", "t", `{}`), wire.MachineTimeout)
	if n := testutilTimeouts(w, "machine"); n != 1 {
		t.Errorf("timeouts %v", n)
	}
	late := env.next()
	env.send(wire.AnswerFrame(wire.Observed(late.CallID, json.RawMessage(`{}`), nil)))
	testkit.Eventually(t, "the late answer to be counted", func() bool { return w.rejected("unknown-call") == 1 })
}

// TestBadAnswersNeverSettle: malformed, unknown-field, version-mismatch,
// unattributed and binary frames over a real socket settle nothing; the
// call ends machine-timeout.
func TestBadAnswersNeverSettle(t *testing.T) {
	w := newWorld(t, nil)
	env := w.env(w.pair("lab")).catalog(desc("labtool", 200)).answering(func(c wire.Call) []byte {
		return nil
	})
	env.answering(func(c wire.Call) []byte {
		for _, f := range []string{
			`{"v":1,"callId":"` + c.CallID + `","ok":true}`,
			`{"v":1,"callId":"` + c.CallID + `","ok":true,"observed":{},"decision":"allow"}`,
			`{"v":7,"callId":"` + c.CallID + `","ok":true,"observed":{}}`,
			`{"v":1,"callId":"b_1","ok":true,"observed":{}}`,
			`{"v":1,"callId":"` + c.CallID + `x","ok":true,"observed":{}}`,
			`{"type":"answer","v":1,"callId":"` + c.CallID + `","ok":true,"observed":{}}`,
		} {
			env.send([]byte(f))
		}
		_ = env.conn.Write(context.Background(), websocket.MessageBinary, wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(`{}`), nil)))
		return nil
	})
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	wantRule(t, w.call("c", "labtool", "t", `{}`), wire.MachineTimeout)
	for reason, want := range map[string]float64{"malformed": 2, "unknown-field": 1, "version-mismatch": 1, "unknown-call": 2, "catalog-invalid": 1} {
		if got := w.rejected(reason); got != want {
			t.Errorf("frames rejected{%s} = %v, want %v", reason, got, want)
		}
	}
	if !strings.Contains(w.logs.String(), `"reason":"unknown-field"`) || strings.Contains(w.logs.String(), "decision") {
		t.Error("rejections must be logged by reason, never with the frame")
	}
}

// TestCatalogReplacedAndInvalidKept: a new catalog replaces the old; an
// invalid one is counted and the previous one stays.
func TestCatalogReplacedAndInvalidKept(t *testing.T) {
	w := newWorld(t, nil)
	env := w.env(w.pair("lab")).catalog(desc("one", 1000))
	testkit.Eventually(t, "the first catalog", func() bool { return w.routed("one", "machine:lab") })
	many := make([]wire.Descriptor, wire.MaxCatalogDescriptors+1)
	for i := range many {
		many[i] = desc(fmt.Sprintf("d%d", i), 1000)
	}
	bad := []string{
		`{"type":"catalog"}`,
		`{"type":"catalog","descriptors":null}`,
		`{"type":"catalog","descriptors":[],"grant":"all"}`,
		`{"type":"catalog","descriptors":[{"descriptorId":"x","executor":"local","tools":[],"bounds":{}}]}`,
		`{"type":"catalog","descriptors":[{"descriptorId":"Bad Id","tools":[{"name":"t","description":"","inputSchema":{}}],"bounds":{"timeoutMs":1,"memoryMiB":1,"maxOutputBytes":1,"maxRequests":0,"allowedHosts":[],"roots":[]}}]}`,
		string(wire.CatalogFrame([]wire.Descriptor{desc("dup", 1), desc("dup", 1)})),
		string(wire.CatalogFrame(many)),
		`{"type":"hello","role":"environment","bearer":"x"}`,
		`{"type":"whatever"}`,
	}
	for _, f := range bad {
		env.send([]byte(f))
	}
	testkit.Eventually(t, "the invalid catalogs to be counted", func() bool { return w.rejected("catalog-invalid") == float64(len(bad)) })
	if !w.routed("one", "machine:lab") {
		t.Fatal("an invalid catalog replaced the previous one")
	}
	env.catalog(desc("two", 1000))
	testkit.Eventually(t, "the second catalog", func() bool { return w.routed("two", "machine:lab") && !w.routed("one", "machine:lab") })
	env.catalog()
	testkit.Eventually(t, "the empty catalog", func() bool { return len(w.ch.Routes()) == 0 })
}

// TestEnvironmentReplaced: a second connection under the same pairing
// replaces the first, which is closed 1000 environment-replaced with its
// calls machine-closed.
func TestEnvironmentReplaced(t *testing.T) {
	w := newWorld(t, nil)
	bearer := w.pair("lab")
	first := w.env(bearer).catalog(desc("labtool", 60000))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	inflight := w.callAsync("c", "labtool")
	first.next()
	w.env(bearer).answering(echo("second"))
	first.wantClosed(websocket.StatusNormalClosure, link.ReasonEnvironmentReplaced)
	wantRule(t, <-inflight, wire.MachineClosed)
	wantObserved(t, w.call("c2", "labtool", "t", `{}`), `{"who":"second"}`)
	if w.peers("machine") != 1 {
		t.Errorf("peers{machine} = %v", w.peers("machine"))
	}
}

// localSource stands for the broker's own executors.
type localSource []wire.Descriptor

func (l localSource) Lookup(id string) (calls.Route, bool) {
	for _, d := range l {
		if d.DescriptorID == id {
			return calls.Route{Descriptor: &d, Executor: "local", To: localExecutor{}}, true
		}
	}
	return calls.Route{}, false
}

func (l localSource) Routes() []calls.Route {
	var out []calls.Route
	for _, d := range l {
		rt, _ := l.Lookup(d.DescriptorID)
		out = append(out, rt)
	}
	return out
}

type localExecutor struct{}

func (localExecutor) Call(_ context.Context, c wire.Call) wire.Answer {
	return wire.Observed(c.CallID, json.RawMessage(`{"who":"local"}`), nil)
}

// TestRoutingRule: local wins over machines, machines in ascending byte
// order of their names, and machines over the page: a page's entries for
// held ids are dropped when it announces them, and a pairing announcing an
// id the page holds takes it. A shadowed descriptor is listed where calls
// go and logged once.
func TestRoutingRule(t *testing.T) {
	w := newWorld(t, nil, localSource{desc("x", 1000)})
	alpha, beta := w.pair("alpha"), w.pair("beta")
	w.env(beta).catalog(desc("x", 1000), desc("y", 1000), desc("b1", 1000)).answering(echo("beta"))
	testkit.Eventually(t, "beta", func() bool { return w.routed("y", "machine:beta") })
	w.env(alpha).catalog(desc("x", 1000), desc("y", 1000), desc("a1", 1000)).answering(echo("alpha"))
	testkit.Eventually(t, "alpha", func() bool { return w.routed("y", "machine:alpha") })
	page := w.page().catalog(desc("x", 1000), desc("y", 1000), desc("p1", 1000), desc("z", 1000)).answering(echo("page"))
	testkit.Eventually(t, "the page", func() bool { return w.routed("p1", "page") })

	where := map[string]string{}
	for _, d := range w.router.Descriptors() {
		where[d.DescriptorID] = d.Executor
	}
	wantWhere := map[string]string{"x": "local", "y": "machine:alpha", "p1": "page", "z": "page", "a1": "machine:alpha", "b1": "machine:beta"}
	if fmt.Sprint(where) != fmt.Sprint(wantWhere) {
		t.Errorf("descriptors listed %v, want %v", where, wantWhere)
	}
	for id, who := range map[string]string{"x": "local", "y": "alpha", "a1": "alpha", "b1": "beta", "p1": "page", "z": "page"} {
		wantObserved(t, w.call("c", id, "t", `{}`), `{"who":"`+who+`"}`)
	}
	if n := w.rejected("descriptor-held"); n != 2 {
		t.Errorf("descriptor-held %v, want 2 (x, y)", n)
	}
	// A pairing announcing an id the page holds takes it.
	w.env(w.pair("gamma")).catalog(desc("z", 1000)).answering(echo("gamma"))
	testkit.Eventually(t, "gamma", func() bool { return w.routed("z", "machine:gamma") })
	wantObserved(t, w.call("c", "z", "t", `{}`), `{"who":"gamma"}`)
	page.leave()
	testkit.Eventually(t, "the page to leave", func() bool { return w.peers("page") == 0 })
	wantObserved(t, w.call("c", "y", "t", `{}`), `{"who":"alpha"}`)
	// The departed page's own entries are remembered and refused no-page.
	wantRule(t, w.call("c", "p1", "t", `{}`), wire.NoPage)

	// Each shadowing is logged once: x under local for every machine; y
	// under alpha for beta; z under gamma for the page. The page's x and
	// y were dropped, not shadowed.
	shadowLogs := func() map[string]int {
		seen := map[string]int{}
		for _, line := range strings.Split(w.logs.String(), "\n") {
			var l struct{ Msg, Descriptor, Executor, Winner string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "descriptor shadowed: calls go to the higher-priority executor" {
				seen[l.Descriptor+" "+l.Executor+" "+l.Winner]++
			}
		}
		return seen
	}
	want := map[string]int{"x machine:alpha local": 1, "x machine:beta local": 1,
		"y machine:beta machine:alpha": 1, "z page machine:gamma": 1}
	if got := shadowLogs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shadow logs %v, want %v", got, want)
	}
	w.env(alpha).catalog(desc("x", 1000), desc("y", 1000), desc("a1", 1000))
	testkit.Eventually(t, "alpha again", func() bool { return strings.Count(w.logs.String(), "catalog accepted") == 5 })
	if got := shadowLogs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the same shadowing was logged again: %v", got)
	}
}

// TestRememberedCatalogAcrossRestart: a pairing's last catalog is kept on
// disk, so after a restart its descriptors answer machine-unreachable at
// once; `pair rm` forgets them.
func TestRememberedCatalogAcrossRestart(t *testing.T) {
	w := newWorld(t, nil)
	env := w.env(w.pair("lab")).catalog(desc("labtool", 60000))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	env.leave()
	testkit.Eventually(t, "lab to leave", func() bool { return w.peers("machine") == 0 })
	wantRule(t, w.call("c", "labtool", "t", `{}`), wire.MachineUnreachable)
	w.restart()
	if !w.routed("labtool", "machine:lab") {
		t.Fatal("the catalog was not remembered across a restart")
	}
	wantRule(t, w.call("c", "labtool", "t", `{}`), wire.MachineUnreachable)
	w.unpair("lab")
	wantRule(t, w.call("c", "labtool", "t", `{}`), wire.UnattributedCall)
	if _, ok, _ := pairing.LoadCatalog(w.data, "lab"); ok {
		t.Error("pair rm left the catalog on disk")
	}
}

// TestCloseSettlesEverything: Close settles calls in flight closed and
// leaves no connection, goroutine or pending entry.
func TestCloseSettlesEverything(t *testing.T) {
	w := newWorld(t, nil)
	env := w.env(w.pair("lab")).catalog(desc("labtool", 60000))
	page := w.page().catalog(desc("pg", 60000))
	idle := w.dial("/channel", nil) // has not said hello yet
	testkit.Eventually(t, "both catalogs", func() bool { return w.routed("labtool", "machine:lab") && w.routed("pg", "page") })
	m, p := w.callAsync("m", "labtool"), w.callAsync("p", "pg")
	env.next()
	page.next()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.ch.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wantRule(t, <-m, wire.MachineClosed)
	wantRule(t, <-p, wire.PageClosed)
	for _, peer := range []*peer{env, page, idle} {
		peer.wantClosed(websocket.StatusGoingAway, link.ReasonGoingAway)
	}
	if st := w.ch.Stats(); st != (channel.Stats{}) || w.inflight("machine") != 0 || w.inflight("page") != 0 {
		t.Errorf("after Close: %+v", st)
	}
	if err := w.ch.Reload(); err == nil {
		t.Error("Reload after Close")
	}
}

// TestDrainRefusesNewConnections: while draining, an upgrade is answered
// 503 and connected peers keep working.
func TestDrainRefusesNewConnections(t *testing.T) {
	w := newWorld(t, nil)
	w.page().catalog(desc("pg", 60000)).answering(echo("page"))
	testkit.Eventually(t, "the page", func() bool { return w.routed("pg", "page") })
	w.ch.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, w.wsURL("/channel"), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("upgrade while draining: %v %v", resp, err)
	}
	wantObserved(t, w.call("c", "pg", "t", `{}`), `{"who":"page"}`)
}

// TestOverloadedPerPeer: past channel.max_inflight a call is refused
// overloaded without being sent.
func TestOverloadedPerPeer(t *testing.T) {
	w := newWorld(t, func(o *channel.Options) { o.Config.MaxInflight = 2 })
	env := w.env(w.pair("lab")).catalog(desc("labtool", 60000))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	a, b := w.callAsync("a", "labtool"), w.callAsync("b", "labtool")
	first := env.next()
	env.next()
	wantRule(t, w.call("c", "labtool", "t", `{"n":"c"}`), wire.Overloaded)
	// A refused call is never sent: once a slot is free, the next call the
	// environment sees is d, not c.
	env.send(wire.AnswerFrame(wire.Observed(first.CallID, json.RawMessage(`{}`), nil)))
	var got wire.Answer
	var inflight <-chan wire.Answer // the other of a and b
	select {
	case got = <-a:
		inflight = b
	case got = <-b:
		inflight = a
	}
	if !got.OK {
		t.Fatalf("the answered call: %+v", got)
	}
	d := make(chan wire.Answer, 1)
	go func() { d <- w.call("d", "labtool", "t", `{"n":"d"}`) }()
	if c := env.next(); string(c.Args) != `{"n":"d"}` {
		t.Fatalf("the environment saw %s, want call d", c.Args)
	}
	env.leave()
	wantRule(t, <-inflight, wire.MachineClosed)
	wantRule(t, <-d, wire.MachineClosed)
}
