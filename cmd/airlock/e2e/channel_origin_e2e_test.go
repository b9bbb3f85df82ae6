package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// End-to-end tests of the Origin rule of the executor channel (PROTOCOL
// section 6): an environment whose WebSocket stack sends the Origin of a
// site that is not this machine says hello like one that sends none; a
// browser page on this machine is refused at once whatever it sends.

// Foreign origins that only ever appear as header values: nothing is
// dialled at them.
const (
	ideOrigin = "https://ide.example"
	lanOrigin = "http://10.0.0.5:3000"
)

// originHeader is a request header with one Origin per value.
func originHeader(origins ...string) http.Header { return http.Header{"Origin": origins} }

// refusals is the channel's auth refusal count for reason.
func (w *chanWorld) refusals(reason string) float64 {
	return w.metric("airlock_auth_refusals_total", `code="`+reason+`"`, `endpoint="channel"`)
}

// wantNotAttached fails when descriptor id is listed anywhere or a peer
// is connected: a refused connection left nothing behind.
func (w *chanWorld) wantNotAttached(id string) {
	w.t.Helper()
	if got := w.tools()[id]; got != "" {
		w.t.Fatalf("a refused connection advertised %s (at %q)", id, got)
	}
	if m, p := w.metric("airlock_channel_peers", `peer="machine"`), w.metric("airlock_channel_peers", `peer="page"`); m != 0 || p != 0 {
		w.t.Fatalf("peers after a refusal: machine %v, page %v", m, p)
	}
}

// TestChannelEnvironmentWithForeignOriginServes: an environment whose
// stack sends a foreign Origin and a paired bearer's hello is admitted as
// its pairing and serves a call.
func TestChannelEnvironmentWithForeignOriginServes(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	for _, c := range []struct{ name, origin, id string }{
		{"ide", ideOrigin, "idetool"},
		{"lan", lanOrigin, "lantool"},
	} {
		bearer := w.pair(c.name) // before dialling: the hello bound runs from the upgrade
		env := w.dialChannel("/channel", originHeader(c.origin))
		env.send(wire.HelloFrame(bearer))
		env.send(wire.CatalogFrame([]wire.Descriptor{pageDesc(c.id, w.slow)}))
		testkit.Eventually(t, c.id+" routed to machine:"+c.name, func() bool { return w.tools()[c.id] == "machine:"+c.name })
		res := w.callAsync("c-"+c.name, c.id, w.slow, "echo", `{}`)
		env.answerNext(`{"from":"` + c.name + `"}`)
		if a := res(); !a.OK || string(a.Observed) != `{"from":"`+c.name+`"}` {
			t.Errorf("call to the environment with Origin %s: %+v", c.origin, a)
		}
	}
}

// TestChannelForeignOriginWithoutBearerGetsNothing: a foreign Origin (a
// page on another site can send one) goes through the hello exactly as a
// connection without one: a wrong bearer is refused bearer-refused, no
// hello or a late one executor-unauthenticated at the hello bound; each
// refusal is counted and nothing of the connection is kept.
func TestChannelForeignOriginWithoutBearerGetsNothing(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_HELLO_BOUND_MS=400")
	bearer := w.pair("lab")
	offByOne := []byte(bearer)
	offByOne[10] ^= 1
	claim := wire.CatalogFrame([]wire.Descriptor{pageDesc("atk", w.slow)})
	for _, c := range []struct {
		name   string
		hello  []byte
		late   bool // sent only once the hello bound has fired
		reason string
	}{
		{"wrong bearer", wire.HelloFrame(string(offByOne)), false, "bearer-refused"},
		{"no hello", nil, false, "executor-unauthenticated"},
		{"catalog instead of hello", claim, false, "executor-unauthenticated"},
		{"late hello", wire.HelloFrame(bearer), true, "executor-unauthenticated"},
	} {
		for _, origin := range []string{ideOrigin, lanOrigin} {
			t.Run(c.name+" "+origin, func(t *testing.T) {
				before := w.refusals(c.reason)
				p := w.dialChannel("/channel", originHeader(origin))
				if c.late {
					testkit.Eventually(t, "the hello bound to fire", func() bool { return w.refusals(c.reason) == before+1 })
				}
				if c.hello != nil {
					p.send(c.hello)
				}
				p.send(claim)
				p.wantClose(websocket.StatusPolicyViolation, c.reason)
				if got := w.refusals(c.reason); got != before+1 {
					t.Errorf("refusals %s: %v → %v", c.reason, before, got)
				}
				w.wantNotAttached("atk")
			})
		}
	}
}

// TestChannelBrowserOriginsOnThisMachineRefusedAtOnce: an Origin a page on
// this machine sends (another loopback port under any loopback name, a
// non-http scheme, null), several Origins, or a value no browser sends is
// closed at once, even with a paired bearer's hello: on the hello path
// that hello would have admitted it.
func TestChannelBrowserOriginsOnThisMachineRefusedAtOnce(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("lab")
	port := portOf(w.broker.URL())
	claim := wire.CatalogFrame([]wire.Descriptor{pageDesc("atk", w.slow)})
	for name, h := range map[string]http.Header{
		"127.0.0.1 another port":   originHeader("http://127.0.0.1:1"),
		"localhost another port":   originHeader("http://localhost:1"),
		"[::1] another port":       originHeader("http://[::1]:1"),
		"another loopback address": originHeader("http://127.0.0.2:" + port),
		"a localhost subdomain":    originHeader("http://app.localhost:1"),
		"the unspecified address":  originHeader("http://0.0.0.0:1"),
		"mapped loopback":          originHeader("http://[::ffff:127.0.0.1]:1"),
		"https own port":           originHeader("https://127.0.0.1:" + port),
		"own origin, no cookie":    originHeader(w.broker.URL()),
		"null":                     originHeader("null"),
		"an editor webview":        originHeader("vscode-webview://0a1b2c"),
		"two foreign origins":      originHeader(ideOrigin, ideOrigin),
		"own and foreign":          originHeader(w.broker.URL(), ideOrigin),
		"empty":                    originHeader(""),
		"no scheme":                originHeader("ide.example"),
		"with a path":              originHeader(ideOrigin + "/"),
		"upper case":               originHeader("https://IDE.example"),
		"default port":             originHeader(ideOrigin + ":443"),
		"userinfo":                 originHeader("https://u@ide.example"),
		"short loopback form":      originHeader("http://127.1:1"),
	} {
		t.Run(name, func(t *testing.T) {
			before := w.refusals("executor-unauthenticated")
			p := w.dialChannel("/channel", h)
			p.send(wire.HelloFrame(bearer))
			p.send(claim)
			p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
			if got := w.refusals("executor-unauthenticated"); got != before+1 {
				t.Errorf("refusals: %v → %v", before, got)
			}
			w.wantNotAttached("atk")
		})
	}
}

// TestChannelForeignOriginViewCookieAuthenticatesNothing: on the hello
// path the view cookie and view key are not looked at, even those of a
// live session launched from that very Origin: without a hello the
// connection is refused and never becomes the page; with a paired
// bearer's hello it is that pairing, not the page.
func TestChannelForeignOriginViewCookieAuthenticatesNothing(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t, "VOICEBOX_HELLO_BOUND_MS=400")
	for i, launch := range []string{ideOrigin, w.broker.URL()} {
		id, name := fmt.Sprint("pg", i), fmt.Sprint("lab", i)
		bearer := w.pair(name)
		catalog := wire.CatalogFrame([]wire.Descriptor{pageDesc(id, w.slow)})
		pass := chanViewCookie(t, w, launch)
		h := originHeader(ideOrigin)
		h.Set("Cookie", pass.Cookie.Name+"="+pass.Cookie.Value)
		dial := func() *wsPeer { return w.dialChannel("/local/channel", h, contract.ViewSubprotocols(pass.Key)...) }

		before := w.refusals("executor-unauthenticated")
		p := dial()
		p.send(catalog) // what a page sends first
		p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
		p = dial() // silent: refused when the hello bound fires
		p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
		if got := w.refusals("executor-unauthenticated"); got != before+2 {
			t.Errorf("session of %s: refusals %v → %v", launch, before, got)
		}
		w.wantNotAttached(id)

		env := dial()
		env.send(wire.HelloFrame(bearer))
		env.send(catalog)
		testkit.Eventually(t, id+" routed to machine:"+name, func() bool { return w.tools()[id] == "machine:"+name })
		if n := w.metric("airlock_channel_peers", `peer="page"`); n != 0 {
			t.Errorf("session of %s: the cookie made a page (%v)", launch, n)
		}
		_ = env.conn.Close(websocket.StatusNormalClosure, "")
		testkit.Eventually(t, "the machine peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="machine"`) == 0 })
	}
}
