package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// End-to-end tests of the session bounds: tombstones count toward
// a cap, and a request with two Origin headers is refused on /local/ws
// and bootstrap as it is on /channel.

// dialOrigins opens /local/ws with every given Origin header and returns
// the close the broker answers with.
func dialOrigins(t *testing.T, p *proc, origins []string, cookies ...*http.Cookie) (int, string) {
	t.Helper()
	h := http.Header{}
	for _, o := range origins {
		h.Add("Origin", o)
	}
	for _, c := range cookies {
		h.Add("Cookie", c.Name+"="+c.Value)
	}
	ws, _, err := websocket.Dial(tctx(t), localclient.WSURL(p.URL()), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer ws.CloseNow()
	_, _, err = ws.Read(tctx(t))
	code, reason := localclient.CloseStatus(err)
	return int(code), reason
}

func TestRelayTwoOriginsRefused(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	launch := s.m.LaunchOrigin
	cases := []struct {
		name    string
		origins []string
		cookie  *http.Cookie
	}{
		{"view: launch origin first", []string{launch, "http://evil.example"}, s.ck},
		{"view: launch origin second", []string{"http://evil.example", launch}, s.ck},
		{"view: launch origin twice", []string{launch, launch}, s.ck},
		{"host: launch origin first", []string{launch, "http://evil.example"}, s.hostCookie()},
	}
	for _, c := range cases {
		if code, reason := dialOrigins(t, p, c.origins, c.cookie); code != 4403 || reason != "INVALID_ORIGIN" {
			t.Errorf("%s: closed %d %q, want 4403 INVALID_ORIGIN", c.name, code, reason)
		}
	}
	if v := p.metric(t, `airlock_auth_refusals_total{code="invalid-origin",endpoint="ws"}`); v != float64(len(cases)) {
		t.Fatalf("ws origin refusals counted %v, want %d", v, len(cases))
	}
	// No second host got in and no view joined: the session is as it was.
	barrier(t, s.host, s.views...)
	barrier(t, s.views[0], s.host)
	// The same socket with one Origin is accepted.
	if _, c := p.view(t, s.m, s.pass); c.ViewID == "" {
		t.Fatal("no view id")
	}
}

func TestSessionBootstrapTwoOriginsRefused(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	body, _ := json.Marshal(map[string]string{"workspaceSessionId": m.WorkspaceSessionID, "viewCredential": m.ViewCredential})
	r, _ := http.NewRequestWithContext(tctx(t), "POST", p.URL()+"/local/bootstrap", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Add("Origin", m.LaunchOrigin)
	r.Header.Add("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 403 || e.Error.Code != "INVALID_ORIGIN" || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("two Origins: %d %s cookie %q", resp.StatusCode, e.Error.Code, resp.Header.Get("Set-Cookie"))
	}
	p.bootstrap(t, m) // the credential was not used up
}

// TestSessionTombstoneCap: past local.max_tombstones the oldest tombstone
// is deleted early. Each session is waited for until it answers 410, so
// they become tombstones in a known order.
func TestSessionTombstoneCap(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_LOCAL_MAX_TOMBSTONES=2")
	expired := func() *localclient.Minted {
		m := p.mintFor(t, localclient.MintOptions{TTLSeconds: 1})
		testkit.Eventually(t, "the short session expires", func() bool {
			status, _, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, "x", nil)
			return status == 410
		})
		return m
	}
	statusOf := func(m *localclient.Minted) (int, string) {
		status, body, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, "x", nil)
		return status, errorCode(body)
	}
	a, b := expired(), expired()
	for _, m := range []*localclient.Minted{a, b} { // exactly at the cap
		if st, code := statusOf(m); st != 410 {
			t.Fatalf("tombstone at the cap: %d %s", st, code)
		}
	}
	c := expired()
	if st, code := statusOf(a); st != 401 || code != "INVALID_CREDENTIALS" {
		t.Fatalf("the oldest tombstone past the cap: %d %s, want 401 (deleted early)", st, code)
	}
	for _, m := range []*localclient.Minted{b, c} {
		if st, code := statusOf(m); st != 410 {
			t.Fatalf("newer tombstone: %d %s, want 410", st, code)
		}
	}
	host := &http.Cookie{Name: contract.HostCookie, Value: a.HostCookieKey}
	if code, reason := dialOrigins(t, p, []string{a.LaunchOrigin}, host); code != 4401 || reason != "INVALID_CREDENTIALS" {
		t.Fatalf("the deleted tombstone's host cookie: %d %q", code, reason)
	}
	if v := p.metric(t, `airlock_sessions{state="tombstone"}`); v != 2 {
		t.Fatalf("tombstone gauge %v", v)
	}
	// Minting goes on: the cap bounds tombstones, never live sessions.
	p.mintFor(t, localclient.MintOptions{})
}
