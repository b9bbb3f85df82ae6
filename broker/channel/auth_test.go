package channel_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/channel"
	"github.com/airlock/airlock/broker/channel/link"
	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// TestAuthenticationAttacks provokes every refusal of PROTOCOL section 6
// over a real socket. Each attacker sends a catalog claiming the paired
// environment's descriptor right after its attempt; the connection must be
// closed 1008 with the right reason and never attached: the descriptor
// still answers machine-unreachable at once, and nothing is left held.
func TestAuthenticationAttacks(t *testing.T) {
	w := newWorld(t, func(o *channel.Options) { o.Config.HelloBoundMs = 300 })
	bearer := w.pair("lab")
	revoked := w.pair("gone")
	w.unpair("gone")
	if err := pairing.SaveCatalog(w.data, "lab", []wire.Descriptor{desc("labtool", 60000)}); err != nil {
		t.Fatal(err)
	}
	w.restart() // the catalog is remembered; lab has not connected since
	wantRule(t, w.call("c", "labtool", "t", `{}`), wire.MachineUnreachable)

	claim := wire.CatalogFrame([]wire.Descriptor{desc("labtool", 60000), desc("atk", 60000)})
	// The same bearer with its last character changed.
	last := "A"
	if strings.HasSuffix(bearer, "A") {
		last = "B"
	}
	offByOne := bearer[:len(bearer)-1] + last
	hello := func(fields string) []byte { return []byte(`{"type":"hello",` + fields + `}`) }
	validFields := `"role":"environment","bearer":"` + bearer + `"`
	cases := []struct {
		name   string
		header http.Header
		frames [][]byte
		binary bool
		reason string
		wait   bool // send the frames only after the hello bound has fired
	}{
		{name: "no hello", reason: link.ReasonUnauthenticated},
		{name: "late hello", frames: [][]byte{wire.HelloFrame(bearer)}, wait: true, reason: link.ReasonUnauthenticated},
		{name: "malformed hello", frames: [][]byte{[]byte(`{"type":"hello","role":"environment","bearer":`)}, reason: link.ReasonUnauthenticated},
		{name: "not an object", frames: [][]byte{[]byte(`"` + bearer + `"`)}, reason: link.ReasonUnauthenticated},
		{name: "wrong role", frames: [][]byte{hello(`"role":"page","bearer":"` + bearer + `"`)}, reason: link.ReasonUnauthenticated},
		{name: "missing role", frames: [][]byte{hello(`"bearer":"` + bearer + `"`)}, reason: link.ReasonUnauthenticated},
		{name: "extra keys", frames: [][]byte{hello(validFields + `,"grant":"everything"`)}, reason: link.ReasonUnauthenticated},
		{name: "duplicate keys", frames: [][]byte{hello(validFields + `,"bearer":"` + bearer + `"`)}, reason: link.ReasonUnauthenticated},
		{name: "bearer not a string", frames: [][]byte{hello(`"role":"environment","bearer":1`)}, reason: link.ReasonUnauthenticated},
		{name: "huge hello", frames: [][]byte{hello(validFields + strings.Repeat(" ", 1<<20))}, reason: link.ReasonUnauthenticated},
		{name: "binary hello", frames: [][]byte{wire.HelloFrame(bearer)}, binary: true, reason: link.ReasonUnauthenticated},
		{name: "catalog instead of hello", frames: [][]byte{claim}, reason: link.ReasonUnauthenticated},
		{name: "unknown bearer", frames: [][]byte{wire.HelloFrame(func() string { b, _ := pairing.NewBearer(); return b }())}, reason: link.ReasonBearerRefused},
		{name: "bearer one character off", frames: [][]byte{wire.HelloFrame(offByOne)}, reason: link.ReasonBearerRefused},
		{name: "bearer with a suffix", frames: [][]byte{wire.HelloFrame(bearer + "x")}, reason: link.ReasonBearerRefused},
		{name: "revoked bearer", frames: [][]byte{wire.HelloFrame(revoked)}, reason: link.ReasonBearerRefused},
		{name: "empty bearer", frames: [][]byte{hello(`"role":"environment","bearer":""`)}, reason: link.ReasonUnauthenticated},
		{name: "foreign origin with a wrong bearer", header: http.Header{"Origin": {"https://evil.example"}}, frames: [][]byte{wire.HelloFrame(offByOne)}, reason: link.ReasonBearerRefused},
		{name: "foreign origin without a hello", header: http.Header{"Origin": {"https://evil.example"}}, reason: link.ReasonUnauthenticated},
		{name: "foreign origin with a catalog instead of hello", header: http.Header{"Origin": {"https://evil.example"}}, frames: [][]byte{claim}, reason: link.ReasonUnauthenticated},
		{name: "loopback origin on another port", header: http.Header{"Origin": {"http://127.0.0.1:1"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "localhost origin on another port", header: http.Header{"Origin": {"http://localhost:1"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "[::1] origin on another port", header: http.Header{"Origin": {"http://[::1]:1"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "webview origin", header: http.Header{"Origin": {"vscode-webview://0a1b2c"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "origin no browser writes", header: http.Header{"Origin": {"https://Evil.example"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "two foreign origins", header: http.Header{"Origin": {"https://evil.example", "https://evil.example"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "origin null", header: http.Header{"Origin": {"null"}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "empty origin", header: http.Header{"Origin": {""}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "https loopback origin", header: http.Header{"Origin": {"https://127.0.0.1:" + w.port()}}, frames: [][]byte{wire.HelloFrame(bearer)}, reason: link.ReasonUnauthenticated},
		{name: "loopback origin with a path", header: http.Header{"Origin": {"http://127.0.0.1:" + w.port() + "/x"}}, reason: link.ReasonUnauthenticated},
		{name: "two origins", header: http.Header{"Origin": {w.loopbackOrigin(), w.loopbackOrigin()}}, reason: link.ReasonUnauthenticated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.refusals(c.reason)
			p := w.dial("/channel", c.header)
			if c.wait {
				testkit.Eventually(t, "the hello bound to fire", func() bool { return w.refusals(c.reason) > before })
			}
			for _, f := range c.frames {
				if c.binary {
					_ = p.conn.Write(context.Background(), websocket.MessageBinary, f)
				} else {
					p.send(f)
				}
			}
			p.send(claim)
			p.wantClosed(websocket.StatusPolicyViolation, c.reason)
			if got := w.refusals(c.reason); got != before+1 {
				t.Errorf("auth refusals{%s} went from %v to %v", c.reason, before, got)
			}
			if w.peers("machine") != 0 || w.peers("page") != 0 || w.routed("atk", "machine:lab") || w.routed("atk", "page") {
				t.Fatalf("attached: peers %v/%v, routes %v", w.peers("machine"), w.peers("page"), w.ch.Routes())
			}
			wantRule(t, w.call("c", "labtool", "t", `{}`), wire.MachineUnreachable)
			testkit.Eventually(t, "the connection to be released", func() bool { return w.ch.Stats().Conns == 0 })
		})
	}
	// The real environment still gets in after all that.
	w.env(bearer).catalog(desc("labtool", 60000)).answering(echo("lab"))
	testkit.Eventually(t, "lab to attach", func() bool { return w.peers("machine") == 1 })
	testkit.Eventually(t, "lab's call", func() bool { return w.call("c", "labtool", "t", `{}`).OK })
}

// TestForeignOriginEnvironmentAdmitted: a connection whose Origin is a
// site other than this machine is an environment like one without an
// Origin: a paired bearer's hello admits it as that pairing.
func TestForeignOriginEnvironmentAdmitted(t *testing.T) {
	w := newWorld(t, nil)
	bearer := w.pair("lab")
	p := w.dial("/channel", http.Header{"Origin": {"https://ide.example"}})
	p.send(wire.HelloFrame(bearer))
	p.catalog(desc("labtool", 60000)).answering(echo("lab"))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	if a := w.call("c", "labtool", "t", `{}`); !a.OK {
		t.Errorf("call to the environment with a foreign Origin: %+v", a)
	}
	if w.peers("page") != 0 {
		t.Error("the foreign Origin made a page")
	}
}

// TestRevokedWhileConnected: removing a pairing closes its live connection
// 1008 bearer-refused, settles its calls machine-closed and forgets its
// catalog, in memory and on disk.
func TestRevokedWhileConnected(t *testing.T) {
	w := newWorld(t, nil)
	env := w.env(w.pair("lab")).catalog(desc("labtool", 60000))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	inflight := w.callAsync("c1", "labtool")
	env.next()
	w.unpair("lab")
	env.wantClosed(websocket.StatusPolicyViolation, link.ReasonBearerRefused)
	wantRule(t, <-inflight, wire.MachineClosed)
	if _, ok, _ := pairing.LoadCatalog(w.data, "lab"); ok || w.routed("labtool", "machine:lab") {
		t.Error("the revoked pairing's catalog is still remembered")
	}
	wantRule(t, w.call("c2", "labtool", "t", `{}`), wire.UnattributedCall)
	if w.inflight("machine") != 0 || w.peers("machine") != 0 {
		t.Errorf("gauges inflight %v peers %v", w.inflight("machine"), w.peers("machine"))
	}
}

// TestPairedAgainRefusesTheOldBearer: rm then add under the same name
// issues a new bearer; the old one is refused even while connected.
func TestPairedAgainRefusesTheOldBearer(t *testing.T) {
	w := newWorld(t, nil)
	old := w.pair("lab")
	env := w.env(old).catalog(desc("labtool", 60000))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	if err := pairing.Remove(w.data, "lab"); err != nil {
		t.Fatal(err)
	}
	fresh, err := pairing.Add(w.data, "lab", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ch.Reload(); err != nil {
		t.Fatal(err)
	}
	env.wantClosed(websocket.StatusPolicyViolation, link.ReasonBearerRefused)
	w.env(old).wantClosed(websocket.StatusPolicyViolation, link.ReasonBearerRefused)
	w.env(fresh).catalog(desc("labtool", 60000)).answering(echo("lab"))
	testkit.Eventually(t, "the new bearer's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	wantObserved(t, w.call("c", "labtool", "t", `{}`), `{"who":"lab"}`)
}

// TestPairingsFileWatched: the broker notices `pair add` and `pair rm`
// without a reload call.
func TestPairingsFileWatched(t *testing.T) {
	w := newWorld(t, func(o *channel.Options) { o.Watch = true })
	bearer, err := pairing.Add(w.data, "lab", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var env *peer
	// Until the watcher has loaded the new pairing, the broker refuses the
	// bearer and closes the connection; after, it routes the catalog.
	// Each attempt waits for one or the other, never for a fixed time.
	testkit.Eventually(t, "the new pairing to be accepted", func() bool {
		env = w.env(bearer).catalog(desc("labtool", 60000))
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			if w.routed("labtool", "machine:lab") {
				return true
			}
			select {
			case <-env.done:
				return false
			case <-time.After(5 * time.Millisecond): // polling period
			}
		}
		return false
	})
	if err := pairing.Remove(w.data, "lab"); err != nil {
		t.Fatal(err)
	}
	env.wantClosed(websocket.StatusPolicyViolation, link.ReasonBearerRefused)
}

// TestUnusablePairingsFileFailsClosed: a pairings file others may read is
// not used at all.
func TestUnusablePairingsFileFailsClosed(t *testing.T) {
	w := newWorld(t, nil)
	bearer := w.pair("lab")
	env := w.env(bearer).catalog(desc("labtool", 60000))
	testkit.Eventually(t, "lab's catalog", func() bool { return w.routed("labtool", "machine:lab") })
	if err := chmod(pairing.Path(w.data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.ch.Reload(); err == nil {
		t.Fatal("Reload accepted a world-readable pairings file")
	}
	env.wantClosed(websocket.StatusPolicyViolation, link.ReasonBearerRefused)
	w.env(bearer).wantClosed(websocket.StatusPolicyViolation, link.ReasonBearerRefused)
	if !strings.Contains(w.logs.String(), "pairings file not used") {
		t.Error("the unusable file was not logged")
	}
	if _, ok, _ := pairing.LoadCatalog(w.data, "lab"); !ok {
		t.Error("a damaged file made the broker delete remembered catalogs")
	}
}
