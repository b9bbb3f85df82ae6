package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// End-to-end attacks on the executor channel: a local process
// posing as the page executor, a page claiming descriptors that other
// executors hold, and peers answering outside their descriptor's bounds.

// pageTool is the one tool of the descriptors a test page advertises.
var pageTool = []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}

// pageDesc is a page descriptor with bounds b.
func pageDesc(id string, b wire.Bounds) wire.Descriptor {
	return wire.Descriptor{DescriptorID: id, Tools: pageTool, Bounds: b}
}

// pageWith dials /local/channel with the broker's own loopback Origin and,
// unless pass is nil, its view cookie and view key.
func (w *chanWorld) pageWith(pass *localclient.ViewPass) *wsPeer {
	h := http.Header{"Origin": {w.broker.URL()}}
	if pass == nil {
		return w.dialChannel("/local/channel", h)
	}
	h.Set("Cookie", pass.Cookie.Name+"="+pass.Cookie.Value)
	return w.dialChannel("/local/channel", h, contract.ViewSubprotocols(pass.Key)...)
}

// answerNext reads the next call and answers it ok with observed; it
// returns the call.
func (p *wsPeer) answerNext(observed string) wire.Call {
	p.t.Helper()
	c := p.nextCall()
	p.send(wire.AnswerFrame(wire.Observed(c.CallID, json.RawMessage(observed), nil)))
	return c
}

// TestChannelPageAuthDefaultOn: with the default configuration a loopback
// page needs the view cookie of a live session whose launch origin is the
// connection's Origin; another session's cookie (even one for another of
// the broker's own loopback origins) is refused; a valid one makes it the
// page executor.
func TestChannelPageAuthDefaultOn(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	origin := w.broker.URL()
	pd := pageDesc("pg", w.slow)

	noCookie := w.pageWith(nil)
	noCookie.send(wire.CatalogFrame([]wire.Descriptor{pd}))
	noCookie.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")

	// A live view cookie, but of a session launched from another origin:
	// http://localhost:PORT is the same broker, so the browser would send
	// both cookies to it; the connection's Origin is 127.0.0.1.
	port := origin[strings.LastIndex(origin, ":")+1:]
	foreign := chanViewCookie(t, w, "http://localhost:"+port)
	wrongOrigin := w.pageWith(foreign)
	wrongOrigin.send(wire.CatalogFrame([]wire.Descriptor{pd}))
	wrongOrigin.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
	other := chanViewCookie(t, w, "http://127.0.0.1:5173")
	p := w.pageWith(other)
	p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")

	if got := w.tools()["pg"]; got != "" {
		t.Fatalf("a refused page advertised pg (%q)", got)
	}
	if n := w.metric("airlock_auth_refusals_total", `code="executor-unauthenticated"`, `endpoint="channel"`); n != 3 {
		t.Errorf("refusals %v, want 3", n)
	}

	// The real thing: the cookie of a session launched from this Origin.
	page := w.pageWith(chanViewCookie(t, w, origin))
	page.send(wire.CatalogFrame([]wire.Descriptor{pd}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	res := w.callAsync("c1", "pg", w.slow, "echo", `{}`)
	page.answerNext(`{"from":"page"}`)
	if a := res(); !a.OK || string(a.Observed) != `{"from":"page"}` {
		t.Errorf("call to the authenticated page: %+v", a)
	}
	if strings.Contains(w.broker.Stderr(), "loopback_auth is off") {
		t.Error("the loopback-auth warning was logged with the check on")
	}
}

// TestChannelPageAuthExplicitlyOff: VOICEBOX_LOOPBACK_AUTH=0 restores the
// Origin-only rule, and start-up says so as a warning.
func TestChannelPageAuthExplicitlyOff(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_LOOPBACK_AUTH=0")
	warned := false
	for _, line := range scanLines(w.broker.Stderr()) {
		warned = warned || (strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, "loopback_auth is off"))
	}
	if !warned {
		t.Error("no start-up warning that loopback auth is off")
	}
	page := w.pageWith(nil)
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pg", w.slow)}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	res := w.callAsync("c1", "pg", w.slow, "echo", `{}`)
	page.answerNext(`{"from":"page"}`)
	if a := res(); !a.OK {
		t.Errorf("call to the cookie-less page: %+v", a)
	}
}

// TestChannelPageCannotClaimHeldDescriptors: a page announcing the
// descriptor of a connected pairing, of a pairing that has gone (its
// catalog remembered) and of a local plugin has those entries dropped and
// counted; calls for them still go to the machine or the local executor,
// and the page only ever receives calls for what it legitimately holds.
func TestChannelPageCannotClaimHeldDescriptors(t *testing.T) {
	t.Parallel()
	probe := wire.Bounds{TimeoutMs: 2000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}
	local := chanPlugins(t, map[string]wire.Bounds{"notes": probe})
	w := newChanWorld(t, "AIRLOCK_PLUGINS="+local)
	env := w.startEnv(w.pair("lab"), chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	w.waitServing("notes", probe)

	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("fx", w.bounds), pageDesc("notes", probe), pageDesc("pg", w.slow)}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	if got := w.tools(); got["fx"] != "machine:lab" || got["notes"] != "local" {
		t.Fatalf("held descriptors moved: %v", got)
	}
	if a := w.callAsync("m1", "fx", w.bounds, "echo", `{"to":"machine"}`)(); !a.OK || string(a.Observed) != `{"to":"machine"}` {
		t.Errorf("fx with a page claiming it: %+v", a)
	}
	if a := w.callAsync("l1", "notes", probe, "echo", `{"to":"local"}`)(); !a.OK || string(a.Observed) != `{"to":"local"}` {
		t.Errorf("notes with a page claiming it: %+v", a)
	}
	// The page's first call must be the one for pg: fx and notes never
	// reached it.
	res := w.callAsync("p1", "pg", w.slow, "echo", `{}`)
	if c := page.answerNext(`{"from":"page"}`); c.DescriptorID != "pg" {
		t.Fatalf("the page received a call for %q", c.DescriptorID)
	}
	if a := res(); !a.OK {
		t.Errorf("pg: %+v", a)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="descriptor-held"`); n != 2 {
		t.Errorf("descriptor-held %v, want 2", n)
	}
	w.broker.waitStderr("page catalog entry dropped")

	// The environment goes; its catalog is remembered, so fx stays its
	// own: a new page catalog cannot take it, and fx is refused
	// machine-unreachable rather than sent to the page.
	env.Kill()
	testkit.Eventually(t, "the machine peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="machine"`) == 0 })
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("fx", w.bounds), pageDesc("pg2", w.slow)}))
	testkit.Eventually(t, "pg2 routed to the page", func() bool { return w.tools()["pg2"] == "page" })
	if got := w.tools()["fx"]; got != "machine:lab" {
		t.Fatalf("fx listed at %q after the environment left", got)
	}
	if a := w.callAsync("m2", "fx", w.bounds, "echo", `{}`)(); a.Refused != wire.MachineUnreachable {
		t.Errorf("fx with its environment gone: %+v", a)
	}
	res = w.callAsync("p2", "pg2", w.slow, "echo", `{}`)
	if c := page.answerNext(`{"from":"page"}`); c.DescriptorID != "pg2" {
		t.Fatalf("the page received a call for %q", c.DescriptorID)
	}
	if a := res(); !a.OK {
		t.Errorf("pg2: %+v", a)
	}
	if n := w.metric("airlock_channel_frames_rejected_total", `reason="descriptor-held"`); n != 3 {
		t.Errorf("descriptor-held %v, want 3", n)
	}
}

// TestChannelPairingOutranksRememberedPageEntry: when the page disconnects
// its descriptors stay remembered (refused no-page), but they hold no id
// from a pairing: one that announces the id later takes it.
func TestChannelPairingOutranksRememberedPageEntry(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pg", w.bounds)}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	_ = page.conn.Close(websocket.StatusNormalClosure, "")
	testkit.Eventually(t, "the page peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })
	if a := w.callAsync("c", "pg", w.bounds, "echo", `{}`)(); a.Refused != wire.NoPage {
		t.Errorf("pg after the page left: %+v", a)
	}
	bearer := w.pair("lab") // before dialling: the hello bound runs from the upgrade
	env := w.dialChannel("/channel", nil)
	env.send(wire.HelloFrame(bearer))
	env.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pg", w.bounds)}))
	testkit.Eventually(t, "pg routed to machine:lab", func() bool { return w.tools()["pg"] == "machine:lab" })
	res := w.callAsync("m", "pg", w.bounds, "echo", `{}`)
	env.answerNext(`{"from":"lab"}`)
	if a := res(); !a.OK || string(a.Observed) != `{"from":"lab"}` {
		t.Errorf("pg held by the pairing: %+v", a)
	}
}

// TestChannelPeerAnswersHeldToBounds: a page's and a machine's answers are
// held to the descriptor's bounds: an observation over maxOutputBytes
// settles output-too-large, and a budget that disagrees with maxRequests
// settles nothing (counted) so the call ends in the peer's timeout.
func TestChannelPeerAnswersHeldToBounds(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	small := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 1, MaxOutputBytes: 100, AllowedHosts: []string{}, Roots: []string{}}
	short := wire.Bounds{TimeoutMs: 3000, MemoryMiB: 1, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}
	big := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	badBudget := func(id string) []byte {
		return []byte(`{"v":1,"callId":"` + id + `","ok":true,"observed":{},"budget":{"requestsUsed":999,"requestsLimit":0}}`)
	}

	bearer := w.pair("lab") // before dialling: the hello bound runs from the upgrade
	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("psmall", small), pageDesc("pshort", short)}))
	env := w.dialChannel("/channel", nil)
	env.send(wire.HelloFrame(bearer))
	env.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("msmall", small), pageDesc("mshort", short)}))
	testkit.Eventually(t, "pshort routed to the page and mshort to machine:lab", func() bool {
		got := w.tools()
		return got["pshort"] == "page" && got["mshort"] == "machine:lab"
	})

	for _, tc := range []struct {
		peer         *wsPeer
		small, short string
		timeout      wire.Rule
		kind         string
	}{
		{page, "psmall", "pshort", wire.PageTimeout, "page"},
		{env, "msmall", "mshort", wire.MachineTimeout, "machine"},
	} {
		res := w.callAsync("big", tc.small, small, "echo", `{}`)
		tc.peer.answerNext(big)
		if a := res(); a.Refused != wire.OutputTooLarge {
			t.Errorf("%s: 1 MiB observed under maxOutputBytes 100: ok %v refused %q, %d bytes observed", tc.kind, a.OK, a.Refused, len(a.Observed))
		}
		before := w.metric("airlock_channel_frames_rejected_total", `reason="budget-mismatch"`)
		res = w.callAsync("budget", tc.short, short, "echo", `{}`)
		c := tc.peer.nextCall()
		tc.peer.send(badBudget(c.CallID))
		if a := res(); a.Refused != tc.timeout {
			t.Errorf("%s: budget {999, 0}: %+v", tc.kind, a)
		}
		if n := w.metric("airlock_channel_frames_rejected_total", `reason="budget-mismatch"`); n != before+1 {
			t.Errorf("%s: budget-mismatch %v, want %v", tc.kind, n, before+1)
		}
	}
}
