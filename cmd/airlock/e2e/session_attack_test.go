package e2e

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// Attacks as a hostile page would try them. Each is refused with the
// right code, and the barrier afterwards proves nothing was relayed to the
// session's real host and view.

// lookalikes of the launch origin (the broker's own, http://127.0.0.1:P).
func lookalikes(p *proc) map[string]string {
	port := strconv.Itoa(p.Port)
	return map[string]string{
		"cross-site":            "http://evil.example",
		"other port":            "http://127.0.0.1:" + strconv.Itoa(p.Port+1),
		"suffix: longer port":   "http://127.0.0.1:" + port + "0",
		"suffix: trailing /":    "http://127.0.0.1:" + port + "/",
		"suffix: domain":        "http://127.0.0.1:" + port + ".evil.example",
		"prefix: subdomain":     "http://evil.127.0.0.1:" + port,
		"prefix: scheme junk":   "xhttp://127.0.0.1:" + port,
		"scheme: https":         "https://127.0.0.1:" + port,
		"scheme: ws":            "ws://127.0.0.1:" + port,
		"localhost not 127":     "http://localhost:" + port,
		"ipv6 loopback not 127": "http://[::1]:" + port,
		"null":                  "null",
		"upper case":            "HTTP://127.0.0.1:" + port,
		"missing Origin":        "",
	}
}

func TestAttackOriginsOnSocket(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	for name, origin := range lookalikes(p) {
		for role, ck := range map[string]*http.Cookie{"view": s.ck, "host": s.hostCookie()} {
			a := p.dial(t, name+" as "+role, localclient.DialOptions{Origin: origin, Cookies: []*http.Cookie{ck}, SessionID: s.m.WorkspaceSessionID})
			_ = a.SendRaw(tctx(t), a.Envelope("hello", map[string]any{}, 0))
			a.closed(4403, "INVALID_ORIGIN")
		}
	}
	barrier(t, s.host, s.views...)
	barrier(t, s.views[0], s.host)
}

func TestAttackOriginsOnBootstrap(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	for name, origin := range lookalikes(p) {
		status, body, h := bootstrapRaw(p, origin, m.WorkspaceSessionID, m.ViewCredential, nil)
		if status != 403 || errorCode(body) != "INVALID_ORIGIN" || len(setCookies(h)) != 0 {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	p.bootstrap(t, m) // the refused attempts did not use the credential up
}

func TestAttackRebindingHost(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	for _, host := range []string{"evil.example:" + strconv.Itoa(p.Port), "evil.example", "127.0.0.1:" + strconv.Itoa(p.Port+1), "127.0.0.1.nip.io:" + strconv.Itoa(p.Port)} {
		_, resp, err := websocket.Dial(context.Background(), localclient.WSURL(p.URL()), &websocket.DialOptions{
			Host: host, HTTPHeader: http.Header{"Origin": {s.m.LaunchOrigin}, "Cookie": {s.ck.Name + "=" + s.ck.Value}}})
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Errorf("Host %s: upgrade not refused 403 (%v)", host, err)
		}
		m := p.mintFor(t, localclient.MintOptions{})
		status, body, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, map[string]string{"Host": host})
		if status != 403 || errorCode(body) != "INVALID_ORIGIN" {
			t.Errorf("bootstrap with Host %s: %d %s", host, status, body)
		}
		status, body, _ = p.do("POST", "/local/sessions", map[string]string{"Host": host, "X-Tensorviz-Token": sessionToken}, []byte(`{"launchOrigin":"http://127.0.0.1:1"}`))
		if status != 403 {
			t.Errorf("mint with Host %s: %d %s", host, status, body)
		}
	}
	barrier(t, s.host, s.views...)
}

func TestAttackReplayedAndExpiredCredentials(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{TTLSeconds: 1})
	ck := p.bootstrap(t, m)
	if status, body, h := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil); status != 401 || len(setCookies(h)) != 0 {
		t.Fatalf("replayed credential: %d %s", status, body)
	}
	testkit.Eventually(t, "expiry", func() bool {
		status, _, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil)
		return status == 410
	})
	a := p.dial(t, "replayed cookie", localclient.DialOptions{Origin: m.LaunchOrigin, Cookies: []*http.Cookie{ck.Cookie}, ViewKey: ck.Key})
	a.closed(4402, "CREDENTIAL_EXPIRED")
}

func TestAttackCrossRoleKeys(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	status, body, _ := bootstrapRaw(p, s.m.LaunchOrigin, s.m.WorkspaceSessionID, s.m.HostCookieKey, nil)
	if status != 401 || errorCode(body) != "INVALID_CREDENTIALS" {
		t.Fatalf("host key as a view credential: %d %s", status, body)
	}
	// Another view cookie name: the real one with its last hex digit
	// changed (to a digit it is not: the name is a hash, any digit occurs).
	otherName := s.ck.Name[:len(s.ck.Name)-1] + "0"
	if otherName == s.ck.Name {
		otherName = s.ck.Name[:len(s.ck.Name)-1] + "1"
	}
	for name, ck := range map[string]*http.Cookie{
		"view cookie used as the host":      {Name: contract.HostCookie, Value: s.ck.Value},
		"host key in the view cookie":       {Name: s.ck.Name, Value: s.m.HostCookieKey},
		"fragment credential as the cookie": {Name: s.ck.Name, Value: s.m.ViewCredential},
		"credential as the host cookie":     {Name: contract.HostCookie, Value: s.m.ViewCredential},
		"view key under another name":       {Name: otherName, Value: s.ck.Value},
	} {
		a := p.dial(t, name, localclient.DialOptions{Origin: s.m.LaunchOrigin, Cookies: []*http.Cookie{ck}, SessionID: s.m.WorkspaceSessionID})
		_ = a.SendRaw(tctx(t), a.Envelope("hello", map[string]any{}, 0))
		a.closed(4401, "INVALID_CREDENTIALS")
	}
	barrier(t, s.host, s.views...)
	barrier(t, s.views[0], s.host)
}

// TestAttackOtherSessionsFrames: a view of one session cannot address
// another session, even with that session's id in the envelope.
func TestAttackOtherSessionsFrames(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	a := connect(t, p, 1, localclient.MintOptions{})
	b := connect(t, p, 1, localclient.MintOptions{})
	a.views[0].sendRaw(localclient.Envelope(b.m.WorkspaceSessionID, "revealNode", map[string]any{"nodeId": "n"}, 0))
	a.views[0].refused("SESSION_MISMATCH", "session-mismatch")
	a.host.sendRaw(localclient.Envelope(b.m.WorkspaceSessionID, "focusNode", map[string]any{}, 1))
	a.host.refused("SESSION_MISMATCH", "session-mismatch")
	barrier(t, b.host, b.views...)
	barrier(t, b.views[0], b.host)
	barrier(t, a.host, a.views...)
}

// TestAttackPlantedHostCookie: a page on another loopback port can set a
// junk tensorviz_local_browser cookie for 127.0.0.1; it must not lock the
// real view out.
func TestAttackPlantedHostCookie(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 0, localclient.MintOptions{})
	v := p.dial(t, "view with a planted cookie", localclient.DialOptions{Origin: s.m.LaunchOrigin, SessionID: s.m.WorkspaceSessionID,
		Cookies: []*http.Cookie{{Name: contract.HostCookie, Value: "planted"}, s.ck}, ViewKey: s.pass.Key})
	c, err := v.Hello(tctx(t))
	if err != nil || c.Role != "view" {
		t.Fatalf("view: %+v %v", c, err)
	}
	if vs := payload(s.host.expect("viewState")); vs["viewId"] != c.ViewID {
		t.Fatalf("viewState %v", vs)
	}
}
