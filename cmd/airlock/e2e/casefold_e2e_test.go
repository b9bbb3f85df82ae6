package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// End-to-end tests of PROTOCOL section 1's last rule: keys equal under
// case folding are duplicates in every JSON object the broker accepts,
// and section 5's identifier characters. Go's encoding/json (the guests',
// the broker's own structs) matches keys case-insensitively and keeps the
// last, so each case below was, before the rule, a way to make the broker
// check one value and a reader act on another.

// TestCaseFoldPluginNotAdmitted: a plugin.json whose bounds say
// "allowedHosts":[] and then "AllowedHosts":[<internal address>] is not
// admitted, and its fetch never reaches that address; a well-formed
// plugin beside it is admitted and its fetch does arrive.
func TestCaseFoldPluginNotAdmitted(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(rw, "internal")
	}))
	t.Cleanup(web.Close)
	internal := strings.TrimPrefix(web.URL, "http://")

	dir := t.TempDir()
	allowed := wire.Bounds{TimeoutMs: 5000, MemoryMiB: 32, MaxOutputBytes: 4096, MaxRequests: 1,
		AllowedHosts: []string{internal}, Roots: []string{}}
	must(t, plugins.WriteFolder(dir, fxManifest("fx", allowed), testkit.Fixture(t, "guest.wasm")))
	none := allowed
	none.AllowedHosts = []string{}
	must(t, plugins.WriteFolder(dir, fxManifest("fold", none), testkit.Fixture(t, "guest.wasm")))
	manifest := filepath.Join(dir, "fold", plugins.ManifestName)
	data, err := os.ReadFile(manifest)
	must(t, err)
	forged := strings.Replace(string(data), `"allowedHosts": []`, `"allowedHosts": [], "AllowedHosts": ["`+internal+`"]`, 1)
	if forged == string(data) {
		t.Fatalf("the manifest has no empty allowedHosts to forge:\n%s", data)
	}
	must(t, os.WriteFile(manifest, []byte(forged), 0o644))

	p := startServe(t, procOptions{Args: []string{"--plugins", dir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	status := pluginStatus(t, p)
	if s := status["fold"]; s.Admitted || s.Reason != plugins.ReasonDescriptorInvalid || !strings.Contains(s.Detail, "duplicate key") {
		t.Fatalf("the forged plugin: %+v, want refused %s (duplicate key)", s, plugins.ReasonDescriptorInvalid)
	}
	if !status["fx"].Admitted {
		t.Fatalf("the well-formed plugin was not admitted: %+v", status["fx"])
	}

	fetch := fmt.Sprintf(`{"url":"%s/"}`, web.URL)
	if a := postCall(t, p, callBody("f1", "fetch", "fold", fetch, none.Canonical())); a.Refused != wire.UnattributedCall {
		t.Errorf("a call to the forged plugin: %+v, want %s", a, wire.UnattributedCall)
	}
	if a := postCall(t, p, callBody("f2", "fetch", "fx", fetch, allowed.Canonical())); !a.OK {
		t.Fatalf("the well-formed plugin's fetch: %+v", a)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the internal address was fetched %d times, want once (by the well-formed plugin only)", n)
	}
}

// pluginStatus is GET /v1/plugins by id.
func pluginStatus(t *testing.T, p *proc) map[string]wire.PluginStatus {
	t.Helper()
	code, body, _ := p.do("GET", "/v1/plugins", map[string]string{"X-Tensorviz-Token": testToken}, nil)
	var out struct{ Plugins []wire.PluginStatus }
	if code != 200 || json.Unmarshal(body, &out) != nil {
		t.Fatalf("GET /v1/plugins: %d %s", code, body)
	}
	m := map[string]wire.PluginStatus{}
	for _, s := range out.Plugins {
		m[s.ID] = s
	}
	return m
}

// callBody is a call envelope; callID and args are written as given.
func callBody(callID, tool, descriptor, args string, echo []byte) string {
	return fmt.Sprintf(`{"v":1,"callId":"%s","tool":%q,"descriptorId":%q,"args":%s,"boundsEcho":%s}`, callID, tool, descriptor, args, echo)
}

// TestCaseFoldArgsRefused: args holding "Paths" and "paths" are refused
// malformed with 400, as an exact duplicate is (a body with a duplicate
// key has no callId anyone can trust, so the refusal's is "-"); the same
// call with one of them is answered.
func TestCaseFoldArgsRefused(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	echo := w.bounds.Canonical()
	for name, args := range map[string]string{
		"exact":  `{"paths":["notes/a.md"],"paths":["../../secret.txt"]}`,
		"folded": `{"Paths":["notes/a.md"],"paths":["../../secret.txt"]}`,
		"deep":   `{"q":{"list":[{"Paths":["a"],"paths":["b"]}]}}`,
		"kelvin": `{"kind":"a","` + "\u212a" + `ind":"b"}`,
	} {
		a, code := postCallStatus(t, w.p, callBody("c-"+name, "echo", "fx", args, echo))
		if code != http.StatusBadRequest || a.Refused != wire.Malformed || a.CallID != wire.UnreadableCallID {
			t.Errorf("%s duplicate: %d %+v, want 400 %s", name, code, a, wire.Malformed)
		}
	}
	a, code := postCallStatus(t, w.p, callBody("c-one", "echo", "fx", `{"paths":["notes/a.md"]}`, echo))
	if code != http.StatusOK || !a.OK || !strings.Contains(string(a.Observed), "notes/a.md") {
		t.Errorf("the same call with one key: %d %+v", code, a)
	}
}

// TestCallIDBidiRefused: a callId holding an unsafe character of PROTOCOL
// section 1.8 (U+202E right-to-left override, an isolate, a separator,
// DEL, a bidirectional mark) is refused malformed with 400, and the
// refusal does not echo it.
func TestCallIDBidiRefused(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	echo := w.bounds.Canonical()
	for _, id := range []string{"call\u202e1", `call\u202e1`, "call\u20661", "call\u20281", "call\u007f1",
		"call\u200e1", `call\u200f1`, "call\u061c1"} {
		a, code := postCallStatus(t, w.p, callBody(id, "echo", "fx", `{}`, echo))
		if code != http.StatusBadRequest || a.Refused != wire.Malformed || a.CallID != wire.UnreadableCallID {
			t.Errorf("callId %+q: %d %+v, want 400 %s with callId %q", id, code, a, wire.Malformed, wire.UnreadableCallID)
		}
	}
	if a, code := postCallStatus(t, w.p, callBody("call1", "echo", "fx", `{}`, echo)); code != http.StatusOK || !a.OK {
		t.Errorf("a plain callId: %d %+v", code, a)
	}
}

// TestCaseFoldHelloRefused: a bearer hello whose key is "BEARER", or that
// holds both "bearer" and "Bearer", is closed 1008
// executor-unauthenticated like any malformed hello, and never attaches
// its catalog; the same bearer in a well-formed hello does.
func TestCaseFoldHelloRefused(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("env")
	claim := wire.CatalogFrame([]wire.Descriptor{{DescriptorID: "fx", Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}, Bounds: w.bounds}})
	for name, hello := range map[string]string{
		"upper-case key": `{"type":"hello","role":"environment","BEARER":"` + bearer + `"}`,
		"folded twin":    `{"type":"hello","role":"environment","bearer":"` + bearer + `","Bearer":"` + bearer + `"}`,
	} {
		// No subtests: the channel helpers fail the world's own test.
		p := w.dialChannel("/channel", nil)
		p.send([]byte(hello))
		p.send(claim)
		p.wantClose(websocket.StatusPolicyViolation, "executor-unauthenticated")
		if ex, listed := w.tools()["fx"]; listed {
			t.Errorf("%s: the hello attached its catalog (fx served by %s)", name, ex)
		}
	}
	p := w.dialChannel("/channel", nil)
	p.send(wire.HelloFrame(bearer))
	p.send(claim)
	testkit.Eventually(t, "fx routed to machine:env", func() bool { return w.tools()["fx"] == "machine:env" })
}

// TestCaseFoldMintRefused: a mint body holding "launchOrigin" and
// "LaunchOrigin", or only "LaunchOrigin", is 400 INVALID_MESSAGE and
// mints nothing; the well-formed body mints.
func TestCaseFoldMintRefused(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	auth := map[string]string{"X-Tensorviz-Token": sessionToken}
	minted := func() float64 { return max(0, p.metric(t, "airlock_sessions_minted_total")) }
	before := minted()
	for _, body := range []string{
		`{"launchOrigin":"http://127.0.0.1:1","LaunchOrigin":"http://evil.example"}`,
		`{"LaunchOrigin":"http://127.0.0.1:1"}`,
		`{"launchOrigin":"http://127.0.0.1:1","ttlSeconds":60,"TTLSeconds":86400}`,
	} {
		code, resp, _ := p.do("POST", "/local/sessions", auth, []byte(body))
		if code != http.StatusBadRequest || errorCode(resp) != "INVALID_MESSAGE" {
			t.Errorf("mint %s: %d %s, want 400 INVALID_MESSAGE", body, code, resp)
		}
	}
	code, resp, _ := p.do("POST", "/local/sessions", auth, []byte(`{"launchOrigin":"http://127.0.0.1:1"}`))
	if code != http.StatusCreated {
		t.Fatalf("a well-formed mint: %d", code)
	}
	var m localclient.Minted
	must(t, json.Unmarshal(resp, &m))
	p.AddSecret(m.ViewCredential)
	p.AddSecret(m.HostCookieKey)
	if got := minted(); got != before+1 {
		t.Errorf("sessions minted %v → %v, want exactly the well-formed one", before, got)
	}
}

// TestCaseFoldRelayFrameRefused: a relay frame with a case-folded
// duplicate key, at the top level or inside its payload, is refused
// INVALID_MESSAGE duplicate-key and relays nothing.
func TestCaseFoldRelayFrameRefused(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	view := s.views[0]
	env := `{"protocolVersion":1,"workspaceSessionId":"` + s.m.WorkspaceSessionID + `",`
	for _, frame := range []string{
		env + `"type":"ack","Type":"focusNode","payload":{}}`,
		env + `"type":"ack","payload":{"note":"a","Note":"b"}}`,
		env + `"type":"ack","payload":{"deep":[{"kind":1,"` + "\u212a" + `ind":2}]}}`,
	} {
		view.sendRaw([]byte(frame))
		view.refused("INVALID_MESSAGE", "duplicate-key")
	}
	barrier(t, view, s.host)
}
