package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// End-to-end tests of /local/ws, one per rule of PROTOCOL section 4, over real
// sockets against the real binary.

// session is a minted session with its host and views connected.
type session struct {
	p     *proc
	m     *localclient.Minted
	pass  *localclient.ViewPass
	ck    *http.Cookie // pass.Cookie
	host  *sock
	views []*sock
	ids   []string
}

// connect mints a session, connects its host, then n views; every
// handshake notification is consumed.
func connect(t *testing.T, p *proc, n int, o localclient.MintOptions) *session {
	t.Helper()
	s, err := p.tryConnect(t, n, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tryConnect is connect that returns what failed instead of failing t;
// the sockets of a failed attempt are closed before it returns, so a
// caller may try again without leaving a connection behind.
func (p *proc) tryConnect(t *testing.T, n int, o localclient.MintOptions) (_ *session, err error) {
	t.Helper()
	if o.LaunchOrigin == "" {
		o.LaunchOrigin = p.URL()
	}
	var opened []*sock
	defer func() {
		if err != nil {
			for _, c := range opened {
				c.CloseNow()
			}
		}
	}()
	ctx := tctx(t)
	m, err := p.client().Mint(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("mint: %w", err)
	}
	p.AddSecret(m.ViewCredential)
	p.AddSecret(m.HostCookieKey)
	pass, _, err := p.client().Bootstrap(ctx, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	p.AddSecret(pass.Cookie.Value)
	p.AddSecret(pass.Key)
	s := &session{p: p, m: m, pass: pass, ck: pass.Cookie}
	if s.host, _, err = p.tryHost(t, m); err != nil {
		return nil, err
	}
	opened = append(opened, s.host)
	for range n {
		v, c, err := p.tryView(t, m, pass)
		if err != nil {
			return nil, err
		}
		opened = append(opened, v)
		s.host.expect("viewState")
		s.views = append(s.views, v)
		s.ids = append(s.ids, c.ViewID)
	}
	return s, nil
}

func (s *session) addView(t *testing.T) *sock {
	t.Helper()
	v, c := s.p.view(t, s.m, s.pass)
	s.host.expect("viewState")
	s.views = append(s.views, v)
	s.ids = append(s.ids, c.ViewID)
	return v
}

func (s *session) hostCookie() *http.Cookie {
	return &http.Cookie{Name: contract.HostCookie, Value: s.m.HostCookieKey}
}

// stalledHostSession mints and bootstraps a session and connects its host
// with a one-message inbox: once that is full the host reads nothing more
// (a busy extension), so the broker's queue toward it fills.
func stalledHostSession(t *testing.T, p *proc) *session {
	t.Helper()
	s := &session{p: p, m: p.mintFor(t, localclient.MintOptions{})}
	s.pass = p.bootstrap(t, s.m)
	s.ck = s.pass.Cookie
	s.host = p.dial(t, "host", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID,
		Cookies: []*http.Cookie{s.hostCookie()}, Inbox: 1})
	if _, err := s.host.Hello(tctx(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRelayTransportChecks(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	expired := p.mintFor(t, localclient.MintOptions{TTLSeconds: 1})
	expiredCk := p.bootstrap(t, expired)
	testkit.Eventually(t, "the short session expires", func() bool {
		status, _, _ := bootstrapRaw(p, expired.LaunchOrigin, expired.WorkspaceSessionID, "x", nil)
		return status == 410
	})
	cases := []struct {
		name    string
		origin  string
		cookies []*http.Cookie
		code    int
		reason  string
	}{
		{"no cookie", s.m.LaunchOrigin, nil, 4401, "INVALID_CREDENTIALS"},
		{"unknown cookie key", s.m.LaunchOrigin, []*http.Cookie{{Name: s.ck.Name, Value: "bm90IGEga2V5"}}, 4401, "INVALID_CREDENTIALS"},
		{"no cookie beats wrong origin", "http://evil.example", nil, 4401, "INVALID_CREDENTIALS"},
		{"valid view cookie, wrong origin", "http://evil.example", []*http.Cookie{s.ck}, 4403, "INVALID_ORIGIN"},
		{"valid host cookie, wrong origin", "http://evil.example", []*http.Cookie{s.hostCookie()}, 4403, "INVALID_ORIGIN"},
		{"expired cookie, wrong origin: origin first", "http://evil.example", []*http.Cookie{expiredCk.Cookie}, 4403, "INVALID_ORIGIN"},
		{"expired view cookie", expired.LaunchOrigin, []*http.Cookie{expiredCk.Cookie}, 4402, "CREDENTIAL_EXPIRED"},
		{"expired host cookie", expired.LaunchOrigin, []*http.Cookie{{Name: contract.HostCookie, Value: expired.HostCookieKey}}, 4402, "CREDENTIAL_EXPIRED"},
	}
	for _, c := range cases {
		a := p.dial(t, c.name, localclient.DialOptions{Origin: c.origin, Cookies: c.cookies, SessionID: s.m.WorkspaceSessionID})
		_ = a.SendRaw(tctx(t), a.Envelope("ack", map[string]any{"leak": true}, 0)) // may fail: the socket is closing
		a.closed(c.code, c.reason)
	}
	barrier(t, s.host, s.views...)
	barrier(t, s.views[0], s.host)
	if v := p.metric(t, `airlock_auth_refusals_total{code="invalid-origin",endpoint="ws"}`); v != 3 {
		t.Fatalf("ws origin refusals counted %v", v)
	}
}

func TestRelayHandshake(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 0, localclient.MintOptions{})
	if c := s.host; c == nil {
		t.Fatal()
	}
	v, c := p.view(t, s.m, s.pass)
	if c.Role != "view" || !c.HostConnected || c.HostEpoch != 1 || !strings.HasPrefix(c.ViewID, "v_") {
		t.Fatalf("view connected %+v", c)
	}
	if vs := payload(s.host.expect("viewState")); vs["viewId"] != c.ViewID || vs["state"] != "connected" {
		t.Fatalf("viewState %v", vs)
	}
	dialView := func(name string) *sock {
		return p.dial(t, name, localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID, Cookies: []*http.Cookie{s.ck}, ViewKey: s.pass.Key})
	}
	bad := []struct {
		name, frame, code, detail string
		close                     int
	}{
		{"not hello first", string(localclient.Envelope(s.m.WorkspaceSessionID, "revealNode", map[string]any{"nodeId": "n"}, 0)), "INVALID_MESSAGE", "hello-expected", 4406},
		{"not json", "hello", "INVALID_MESSAGE", "not-json-object", 4406},
		{"wrong version", `{"protocolVersion":2,"workspaceSessionId":"` + s.m.WorkspaceSessionID + `","type":"hello","payload":{}}`, "PROTOCOL_VERSION_MISMATCH", "protocol-version", 4404},
		{"other session", string(localclient.Envelope("ws_other", "hello", map[string]any{}, 0)), "SESSION_MISMATCH", "session-mismatch", 4405},
		{"unknown type", string(localclient.Envelope(s.m.WorkspaceSessionID, "helo", map[string]any{}, 0)), "UNKNOWN_MESSAGE", "unknown-type", 4407},
	}
	for _, b := range bad {
		a := dialView(b.name)
		a.sendRaw([]byte(b.frame))
		a.refusedThenClosed(b.code, b.detail, b.close)
	}
	barrier(t, s.host, v)
	barrier(t, v, s.host)
}

func TestRelayHandshakeTimeout(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_LOCAL_HANDSHAKE_TIMEOUT_MS=300")
	s := connect(t, p, 0, localclient.MintOptions{})
	silent := p.dial(t, "silent", localclient.DialOptions{Origin: s.m.LaunchOrigin, Cookies: []*http.Cookie{s.ck}, ViewKey: s.pass.Key})
	silent.refusedThenClosed("INVALID_MESSAGE", "handshake-timeout", 4406)
	// The host never heard of the silent socket: the first thing it hears
	// after the silent one was closed is the arrival of a real view.
	_, c := p.view(t, s.m, s.pass)
	if m := s.host.expect("viewState"); payload(m)["viewId"] != c.ViewID || payload(m)["state"] != "connected" {
		t.Fatalf("the host heard of a socket that never completed its handshake: %s", m.Raw)
	}
	if got := p.metric(t, `airlock_ws_connections{endpoint="ws",role="view"}`); got != 1 {
		t.Errorf("view connections %v, want only the real view", got)
	}
}

func TestRelaySecondHostRefused(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 2, localclient.MintOptions{})
	second := p.dial(t, "second host", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID,
		Cookies: []*http.Cookie{s.hostCookie()}})
	if _, err := second.Hello(tctx(t)); err == nil || !strings.Contains(err.Error(), "HOST_ALREADY_CONNECTED") {
		t.Fatalf("second host hello: %v", err)
	}
	second.closed(4408, "HOST_ALREADY_CONNECTED")
	s.host.send("focusNode", map[string]any{"nodeId": "n"}, 1)
	for _, v := range s.views {
		v.expect("focusNode") // the first host and the views are unaffected
	}
	barrier(t, s.views[1], s.host)
}

func TestRelayFramesRefusedConnectionSurvives(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	host, v := s.host, s.views[0]
	sid := s.m.WorkspaceSessionID
	if err := host.SendBinary(tctx(t), []byte(`{"protocolVersion":1}`)); err != nil {
		t.Fatal(err)
	}
	host.refused("INVALID_MESSAGE", "binary-frame")
	big := append([]byte(`{"protocolVersion":1,"workspaceSessionId":"`+sid+`","type":"ack","payload":{"x":"`), bytes.Repeat([]byte("a"), 16<<20)...)
	big = append(big, `"}}`...)
	host.sendRaw(big) // over 16 MiB: never parsed
	host.refused("INVALID_MESSAGE", "frame-too-large")
	refusals := []struct{ frame, code, detail string }{
		{`[1,2]`, "INVALID_MESSAGE", "not-json-object"},
		{`{"protocolVersion":"1","workspaceSessionId":"` + sid + `","type":"ack","payload":{}}`, "PROTOCOL_VERSION_MISMATCH", "protocol-version"},
		{`{"protocolVersion":1,"workspaceSessionId":"ws_x","type":"ack","payload":{}}`, "SESSION_MISMATCH", "session-mismatch"},
		{`{"protocolVersion":1,"workspaceSessionId":"` + sid + `","type":"ack","payload":{},"decision":"allow"}`, "INVALID_MESSAGE", "envelope-key"},
		{`{"protocolVersion":1,"workspaceSessionId":"` + sid + `","type":"runCommand","payload":{}}`, "UNKNOWN_MESSAGE", "unknown-type"},
		{`{"protocolVersion":1,"workspaceSessionId":"` + sid + `","type":"revealNode","payload":{"nodeId":"n"}}`, "INVALID_MESSAGE", "direction"},
	}
	for _, r := range refusals {
		host.sendRaw([]byte(r.frame))
		host.refused(r.code, r.detail)
	}
	v.send("focusNode", map[string]any{}, 1)
	v.refused("INVALID_MESSAGE", "direction")
	barrier(t, host, v) // nothing refused was relayed, and the host's socket still works
	barrier(t, v, host)
	if got := p.metric(t, `airlock_relay_refusals_total{code="invalid-message"}`); got != 6 {
		t.Fatalf("INVALID_MESSAGE refusals %v", got)
	}
}

func TestRelayDirectionAndBroadcast(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 3, localclient.MintOptions{})
	seq := int64(0)
	for _, typ := range []string{"activeTarget", "projection", "syncState", "staleState", "focusNode"} {
		seq++
		s.host.send(typ, map[string]any{"v": typ}, seq)
		for _, v := range s.views {
			if m := v.expect(typ); m.HostSequence != seq || payload(m)["v"] != typ {
				t.Fatalf("%s: %s", v.name, m.Raw)
			}
		}
	}
	for _, typ := range []string{"ack", "error"} {
		s.host.send(typ, map[string]any{"message": "m"}, 0)
		for _, v := range s.views {
			v.expect(typ)
		}
	}
	for _, typ := range []string{"revealNode", "ack", "error"} {
		s.views[0].send(typ, map[string]any{"nodeId": "n", "message": "m"}, 0)
		s.host.expect(typ)
	}
	for _, typ := range []string{"connected", "connectionState", "viewState", "hello"} {
		s.views[1].send(typ, map[string]any{"state": "connected", "viewId": s.ids[2], "hostEpoch": 9}, 0)
		s.views[1].refused("INVALID_MESSAGE", map[bool]string{true: "hello-repeated", false: "broker-owned"}[typ == "hello"])
		s.host.send(typ, map[string]any{"state": "disconnected", "hostEpoch": 9}, 0)
		s.host.refused("INVALID_MESSAGE", map[bool]string{true: "hello-repeated", false: "broker-owned"}[typ == "hello"])
	}
	barrier(t, s.host, s.views...) // view traffic never reached another view
	barrier(t, s.views[2], s.host)
}

func TestRelayConnectionStateAndViewState(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	ck := p.bootstrap(t, m)
	early := p.dial(t, "early view", localclient.DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID, Cookies: []*http.Cookie{ck.Cookie}, ViewKey: ck.Key})
	c, err := early.Hello(tctx(t))
	if err != nil || c.HostConnected || c.HostEpoch != 0 {
		t.Fatalf("view before host: %+v %v", c, err)
	}
	if cs := payload(early.expect("connectionState")); cs["state"] != "disconnected" {
		t.Fatalf("view before host told %v", cs)
	}
	host, hc := p.host(t, m)
	if hc.HostEpoch != 1 || len(hc.Views) != 1 || hc.Views[0] != c.ViewID {
		t.Fatalf("host connected %+v", hc)
	}
	if cs := payload(early.expect("connectionState")); cs["state"] != "connected" || cs["hostEpoch"] != 1.0 {
		t.Fatalf("host arrival %v", cs)
	}
	late, lc := p.view(t, m, ck)
	if vs := payload(host.expect("viewState")); vs["viewId"] != lc.ViewID || vs["state"] != "connected" {
		t.Fatalf("viewState %v", vs)
	}
	_ = late.Close()
	if vs := payload(host.expect("viewState")); vs["viewId"] != lc.ViewID || vs["state"] != "disconnected" {
		t.Fatalf("viewState on leave %v", vs)
	}
	host.CloseNow() // a crash, not a clean close
	if cs := payload(early.expect("connectionState")); cs["state"] != "disconnected" || cs["hostEpoch"] != 1.0 {
		t.Fatalf("host departure %v", cs)
	}
	host2, hc2 := p.host(t, m)
	if hc2.HostEpoch != 2 {
		t.Fatalf("new host epoch %d", hc2.HostEpoch)
	}
	if cs := payload(early.expect("connectionState")); cs["state"] != "connected" || cs["hostEpoch"] != 2.0 {
		t.Fatalf("second host arrival %v", cs)
	}
	barrier(t, host2, early)
}

func TestRelayOrdering(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 2, localclient.MintOptions{})
	s.host.send("focusNode", map[string]any{"n": 1}, 10)
	for _, v := range s.views {
		v.expect("focusNode")
	}
	for _, bad := range []int64{10, 9, 1} {
		s.host.send("projection", map[string]any{}, bad)
		s.host.refused("INVALID_MESSAGE", "sequence")
	}
	s.host.send("projection", map[string]any{}, 11)
	for _, v := range s.views {
		if m := v.next(); m.Type != "projection" || m.HostSequence != 11 {
			t.Fatalf("a view saw a repeat or rewind: %s", m.Raw)
		}
	}
	_ = s.host.Close()
	for _, v := range s.views {
		v.expect("connectionState")
	}
	host2, c := p.host(t, s.m)
	if c.HostEpoch != 2 {
		t.Fatalf("epoch %d", c.HostEpoch)
	}
	for _, v := range s.views {
		v.expect("connectionState")
	}
	host2.send("focusNode", map[string]any{}, 1) // a new epoch restarts ordering
	for _, v := range s.views {
		if m := v.expect("focusNode"); m.HostSequence != 1 {
			t.Fatal(m.Raw)
		}
	}
}

func snapshotOf(tag string) map[string]any {
	return map[string]any{"atHostSequence": 3, "state": map[string]any{"tag": tag}}
}

func TestRelaySnapshotRouting(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	ck := p.bootstrap(t, m)
	a, _ := p.view(t, m, ck)
	b, _ := p.view(t, m, ck)
	gone, _ := p.view(t, m, ck)
	// No host: asks are queued; b asks twice (only the newest stays), gone leaves.
	// Each ask is followed by a revealNode, refused no-host, so the broker
	// has handled the ask before the next socket sends: asks on different
	// sockets have no order otherwise.
	ask := func(v *sock, last any) {
		v.send("snapshotRequest", map[string]any{"lastHostSequence": last}, 0)
		v.send("revealNode", map[string]any{"nodeId": "sync"}, 0)
		v.refused("INVALID_MESSAGE", "no-host")
	}
	ask(b, 1)
	ask(gone, nil)
	ask(a, nil)
	ask(b, 2)
	_ = gone.Close()
	testkit.Eventually(t, "the broker sees the view leave", func() bool {
		return p.metric(t, `airlock_ws_connections{endpoint="ws",role="view"}`) == 2
	})
	host, hc := p.host(t, m)
	if len(hc.Views) != 2 {
		t.Fatalf("host sees %v", hc.Views)
	}
	first, second := payload(host.expect("snapshotRequest")), payload(host.expect("snapshotRequest"))
	if first["lastHostSequence"] != nil || second["lastHostSequence"] != 2.0 {
		t.Fatalf("flushed %v then %v; want a's, then b's newest", first, second)
	}
	a.expect("connectionState")
	b.expect("connectionState")
	host.send("snapshot", snapshotOf("one"), 0)
	if st := payload(a.expect("snapshot"))["state"].(map[string]any); st["tag"] != "one" {
		t.Fatal(st)
	}
	host.send("snapshot", snapshotOf("two"), 0)
	b.expect("snapshot")
	host.send("snapshot", snapshotOf("three"), 0)
	host.refused("INVALID_MESSAGE", "no-pending-snapshot")
	// With a host: forwarded at once; the oldest live asker is served.
	b.send("snapshotRequest", map[string]any{"lastHostSequence": 5}, 0)
	host.expect("snapshotRequest")
	a.send("snapshotRequest", map[string]any{"lastHostSequence": 5}, 0)
	host.expect("snapshotRequest")
	_ = b.Close()
	host.expect("viewState")
	host.send("snapshot", snapshotOf("four"), 0)
	a.expect("snapshot")
	barrier(t, host, a)
}

// families of request routing: request, cancel, progress ("" if none),
// result, and extra fields each needs.
var requestFamilies = []struct {
	req, cancel, progress, result string
	reqExtra, progressExtra       map[string]any
	resultExtra                   map[string]any
}{
	{"sourceEditRequest", "sourceEditCancel", "sourceEditReview", "sourceEditResult", nil, nil, nil},
	{"validateRequest", "validateCancel", "", "validateResult", nil, nil, nil},
	{"captureInspectRequest", "captureInspectCancel", "", "captureInspectResult", nil, nil, map[string]any{"capture": map[string]any{"rows": []int{1, 2}}}},
	{"exportRequest", "exportCancel", "", "exportResult", nil, nil, nil},
	{"graphPublishRequest", "graphPublishCancel", "graphPublishState", "graphPublishResult",
		map[string]any{"graphGzipBase64": gzipB64([]byte(`{"nodes":[]}`))},
		map[string]any{"phase": "signing_in", "connectUrl": "https://tensorviz.example/connect"},
		map[string]any{"status": "published", "graphUrl": "https://tensorviz.example/g/1", "shareUrl": "https://tensorviz.example/s/1"}},
}

func gzipB64(data []byte) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func req(id string, target any, extra map[string]any) map[string]any {
	p := map[string]any{"requestId": id, "target": target}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func TestRelayRequestRouting(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	for _, f := range requestFamilies {
		t.Run(f.req, func(t *testing.T) {
			s := connect(t, p, 2, localclient.MintOptions{CanProposeSourceEdits: true})
			a, b, host := s.views[0], s.views[1], s.host
			target := map[string]any{"file": "model.py", "line": 7}
			id := fmt.Sprintf("r-%d", rand.Int64())
			a.send(f.req, req(id, target, f.reqExtra), 0)
			if got := payload(host.expect(f.req)); got["requestId"] != id {
				t.Fatal(got)
			}
			a.send(f.req, req(id, target, f.reqExtra), 0)
			a.refused("INVALID_MESSAGE", "duplicate-request")
			b.send(f.cancel, req(id, target, nil), 0)
			b.refused("INVALID_MESSAGE", "not-owner")
			other := requestFamilies[1]
			if other.req == f.req {
				other = requestFamilies[3]
			}
			host.send(other.result, req(id, target, other.resultExtra), 0)
			host.refused("INVALID_MESSAGE", "kind-mismatch")
			host.send(f.result, req(id, "another target", f.resultExtra), 0)
			host.refused("INVALID_MESSAGE", "target-mismatch")
			if f.progress != "" {
				host.send(f.progress, req(id, target, f.progressExtra), 0)
				a.expect(f.progress)
			}
			host.send(f.result, req(id, target, f.resultExtra), 0)
			a.expect(f.result)
			host.send(f.result, req(id, target, f.resultExtra), 0)
			host.refused("INVALID_MESSAGE", "unknown-request")
			host.send(f.result, req("never-seen", target, f.resultExtra), 0)
			host.refused("INVALID_MESSAGE", "unknown-request")
			// Cancel by the owner; the late reply is dropped silently.
			a.send(f.req, req(id+"c", target, f.reqExtra), 0)
			host.expect(f.req)
			a.send(f.cancel, req(id+"c", target, nil), 0)
			host.expect(f.cancel)
			host.send(f.result, req(id+"c", target, f.resultExtra), 0)
			barrier(t, host, a, b) // results went to the requester only; the late one to nobody
			barrier(t, b, host)
		})
	}
}

func TestRelayRequestsNeedAHost(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{CanProposeSourceEdits: true})
	v, _ := p.view(t, m, p.bootstrap(t, m))
	for _, f := range requestFamilies {
		v.send(f.req, req("r1", "t", f.reqExtra), 0)
		if pe := v.refused("INVALID_MESSAGE", "no-host"); pe.RequestID != "r1" {
			t.Fatalf("refusal names request %q", pe.RequestID)
		}
	}
	v.send("candidateRequest", map[string]any{"requestId": "c1", "viewId": "x"}, 0)
	v.refused("INVALID_MESSAGE", "view-id")
}

func TestRelayViewLeaveSynthesizesCancels(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 2, localclient.MintOptions{CanProposeSourceEdits: true})
	a, b, host := s.views[0], s.views[1], s.host
	for i, f := range requestFamilies {
		a.send(f.req, req(fmt.Sprintf("a%d", i), map[string]any{"i": i}, f.reqExtra), 0)
		host.expect(f.req)
	}
	a.send("candidateRequest", map[string]any{"requestId": "cand", "viewId": s.ids[0]}, 0)
	host.expect("candidateRequest")
	b.send("validateRequest", req("b1", "t", nil), 0)
	host.expect("validateRequest")
	_ = a.Close()
	seen := map[string]bool{}
	for range requestFamilies {
		m := host.next()
		pl := payload(m)
		if pl["reason"] != "view-disconnected" || !strings.HasSuffix(m.Type, "Cancel") || pl["target"] == nil {
			t.Fatalf("synthesized cancel %s", m.Raw)
		}
		seen[m.Type] = true
	}
	if len(seen) != len(requestFamilies) {
		t.Fatalf("cancels %v", seen)
	}
	if vs := payload(host.expect("viewState")); vs["viewId"] != s.ids[0] || vs["state"] != "disconnected" {
		t.Fatal(vs)
	}
	// Late replies for the abandoned requests are dropped silently.
	host.send("validateResult", req("a1", map[string]any{"i": 1}, nil), 0)
	host.send("candidateResult", map[string]any{"requestId": "cand", "viewId": s.ids[0]}, 0)
	host.send("validateResult", req("b1", "t", nil), 0)
	b.expect("validateResult")
	barrier(t, b, host)
}

func TestRelayHostLeaveClearsRequests(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	v := s.views[0]
	v.send("exportRequest", req("e1", "t", nil), 0)
	s.host.expect("exportRequest")
	_ = s.host.Close()
	v.expect("connectionState")
	host2, _ := p.host(t, s.m)
	v.expect("connectionState")
	host2.send("exportResult", req("e1", "t", nil), 0)
	host2.refused("INVALID_MESSAGE", "unknown-request")
	v.send("exportRequest", req("e1", "t", nil), 0) // no longer in flight: not a duplicate
	host2.expect("exportRequest")
}

func TestRelayCandidates(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 2, localclient.MintOptions{})
	a, b, host := s.views[0], s.views[1], s.host
	a.send("candidateRequest", map[string]any{"requestId": "c1", "viewId": s.ids[1]}, 0)
	a.refused("INVALID_MESSAGE", "view-id") // a forged identity
	a.send("candidateRequest", map[string]any{"requestId": "c1", "viewId": s.ids[0]}, 0)
	host.expect("candidateRequest")
	host.send("candidateResult", map[string]any{"requestId": "c1", "viewId": s.ids[1]}, 0)
	host.refused("INVALID_MESSAGE", "view-mismatch")
	host.send("candidateResult", map[string]any{"requestId": "c1", "viewId": s.ids[0], "items": []string{"x"}}, 0)
	a.expect("candidateResult")
	barrier(t, host, a, b)
}

func TestRelaySourceEditCapability(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	s.views[0].send("sourceEditRequest", req("s1", "t", nil), 0)
	s.views[0].refused("INVALID_MESSAGE", "capability")
	s.host.send("sourceEditReview", req("s1", "t", nil), 0)
	s.host.refused("INVALID_MESSAGE", "capability")
	off := startSessions(t, "AIRLOCK_LOCAL_SOURCE_PROPOSALS=false")
	s2 := connect(t, off, 1, localclient.MintOptions{CanProposeSourceEdits: true})
	s2.views[0].send("sourceEditRequest", req("s1", "t", nil), 0)
	s2.views[0].refused("INVALID_MESSAGE", "capability")
	s3 := connect(t, p, 1, localclient.MintOptions{CanProposeSourceEdits: true})
	s3.views[0].send("sourceEditRequest", req("s1", "t", map[string]any{"viewId": "v_someone_else"}), 0)
	s3.views[0].refused("INVALID_MESSAGE", "view-id")
	s3.views[0].send("sourceEditRequest", req("s1", "t", nil), 0)
	s3.host.expect("sourceEditRequest")
	barrier(t, s.host, s.views[0])
}

func TestRelaySizeBoundsAndURLs(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	v, host := s.views[0], s.host
	huge := make([]byte, 10<<20+1)
	for i := range huge {
		huge[i] = byte(rand.Uint32())
	}
	v.send("graphPublishRequest", req("g1", "t", map[string]any{"graphGzipBase64": gzipB64(huge)}), 0)
	v.refused("INVALID_MESSAGE", "graph-too-large")
	v.send("graphPublishRequest", req("g1", "t", map[string]any{"graphGzipBase64": base64.StdEncoding.EncodeToString([]byte("plain text"))}), 0)
	v.refused("INVALID_MESSAGE", "graph-not-gzip")
	v.send("graphPublishRequest", req("g1", "t", map[string]any{"graphGzipBase64": gzipB64([]byte("{}"))}), 0)
	host.expect("graphPublishRequest")
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "//evil.example", "ftp://x.example"} {
		host.send("graphPublishState", req("g1", "t", map[string]any{"phase": "signing_in", "connectUrl": u}), 0)
		host.refused("INVALID_MESSAGE", "url")
		host.send("graphPublishResult", req("g1", "t", map[string]any{"status": "published", "graphUrl": "https://x.example/g", "shareUrl": u}), 0)
		host.refused("INVALID_MESSAGE", "url")
	}
	v.send("captureInspectRequest", req("c1", "t", nil), 0)
	host.expect("captureInspectRequest")
	blob := strings.Repeat("x", 16<<20) // payload past 16 MiB: the frame cap refuses it first
	host.send("captureInspectResult", req("c1", "t", map[string]any{"blob": blob}), 0)
	host.refused("INVALID_MESSAGE", "frame-too-large")
	host.send("captureInspectResult", req("c1", "t", map[string]any{"blob": blob[:8<<20]}), 0)
	if m := v.expect("captureInspectResult"); len(m.Raw) < 8<<20 {
		t.Fatal("capture truncated")
	}
	barrier(t, host, v)
}

func TestRelaySlowViewDropped(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_LOCAL_OUTBOUND_QUEUE=8")
	s := connect(t, p, 1, localclient.MintOptions{})
	fast := s.views[0]
	slow := p.dial(t, "slow view", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID,
		Cookies: []*http.Cookie{s.ck}, ViewKey: s.pass.Key, Inbox: 1})
	if _, err := slow.Hello(tctx(t)); err != nil {
		t.Fatal(err)
	}
	slowID := payload(s.host.expect("viewState"))["viewId"]
	// The slow view stops reading here. The fast one keeps up: the host
	// sends each message only once the fast view has received the one
	// before, so the fast view is never more than one message behind
	// however loaded the machine is, while the slow view's queue (and the
	// socket buffers under it, far below 400 × 64 KiB) fill up.
	chunk := strings.Repeat("z", 64<<10)
	const n = 400
	for i := range n {
		s.host.send("focusNode", map[string]any{"chunk": chunk}, int64(i+1))
		if _, err := fast.Receive(tctx(t)); err != nil {
			t.Fatalf("the fast view stalled or closed after %d messages: %v", i, err)
		}
	}
	vs := payload(s.host.expect("viewState"))
	if vs["viewId"] != slowID || vs["state"] != "disconnected" {
		t.Fatalf("host told %v", vs)
	}
	if v := p.metric(t, "airlock_relay_dropped_views_total"); v != 1 {
		t.Fatalf("dropped views %v", v)
	}
	// Reading again, the slow view finds its socket closed after what the
	// buffers held: the broker cut it off.
	for {
		if _, err := slow.Receive(tctx(t)); err != nil {
			if !isClose(err) {
				t.Fatalf("the dropped view's socket was not closed: %v", err)
			}
			break
		}
	}
	barrier(t, s.host, fast)
}

func TestRelayMaxViewsPerSession(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_LOCAL_MAX_VIEWS_PER_SESSION=2")
	s := connect(t, p, 2, localclient.MintOptions{})
	third := p.dial(t, "third view", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID, Cookies: []*http.Cookie{s.ck}, ViewKey: s.pass.Key})
	third.send("hello", map[string]any{}, 0)
	third.closed(1013, "too-many-views")
	barrier(t, s.host, s.views...) // the host heard of no third view
	_ = s.views[0].Close()
	s.host.expect("viewState")
	s.addView(t) // a slot is free again
}

// TestCapabilitiesStateWhatTheSessionHas: mint, bootstrap and both
// connected messages state canProposeSourceEdits as the session really
// has it, which is what sourceEditRequest then meets: asked for and
// allowed, proposals are relayed; not asked for, or asked for on a broker
// with local.source_proposals off, every place says false and the request
// is refused capability.
func TestCapabilitiesStateWhatTheSessionHas(t *testing.T) {
	t.Parallel()
	on, off := startSessions(t), startSessions(t, "AIRLOCK_LOCAL_SOURCE_PROPOSALS=false")
	for _, c := range []struct {
		name    string
		p       *proc
		propose bool
		want    bool
	}{
		{"asked, allowed", on, true, true},
		{"not asked", on, false, false},
		{"asked, proposals off", off, true, false},
	} {
		want := contract.Capabilities{ReadOnly: true, CanNavigateSource: true, CanProposeSourceEdits: c.want}
		m := c.p.mintFor(t, localclient.MintOptions{CanProposeSourceEdits: c.propose})
		pass, info, err := c.p.client().Bootstrap(tctx(t), m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential)
		if err != nil {
			t.Fatalf("%s: bootstrap: %v", c.name, err)
		}
		c.p.AddSecret(pass.Cookie.Value)
		c.p.AddSecret(pass.Key)
		host, hc := c.p.host(t, m)
		view, vc := c.p.view(t, m, pass)
		host.expect("viewState")
		for where, got := range map[string]contract.Capabilities{"mint": m.Capabilities, "bootstrap": info.Capabilities,
			"host connected": hc.Capabilities, "view connected": vc.Capabilities} {
			if got != want {
				t.Errorf("%s: %s states %+v, want %+v", c.name, where, got, want)
			}
		}
		view.send("sourceEditRequest", req("s1", "t", nil), 0)
		if c.want {
			host.expect("sourceEditRequest")
		} else {
			view.refused("INVALID_MESSAGE", "capability")
		}
	}
}
