package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// End-to-end tests of minting, bootstrap, cookies and expiry, one per rule
// of PROTOCOL sections 2 to 4, against the real binary.

var secretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`) // 256 bits, URL-safe base64, no padding

func mintRaw(p *proc, token string, body string) (int, []byte) {
	h := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		h["X-Tensorviz-Token"] = token
	}
	status, out, _ := p.do("POST", "/local/sessions", h, []byte(body))
	return status, out
}

func TestSessionMintResponse(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	before := time.Now().UTC().Truncate(time.Second)
	status, body := mintRaw(p, sessionToken, `{"launchOrigin":"http://127.0.0.1:5173","ttlSeconds":120,"canProposeSourceEdits":true}`)
	if status != http.StatusCreated {
		t.Fatalf("mint: %d %s", status, body)
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(body, &keys)
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"capabilities", "expiresAt", "hostCookieKey", "launchOrigin", "protocolVersion", "viewCredential", "workspaceSessionId"}
	if !slices.Equal(names, want) {
		t.Fatalf("mint keys %v, want %v", names, want)
	}
	var m localclient.Minted
	_ = json.Unmarshal(body, &m)
	p.AddSecret(m.ViewCredential)
	p.AddSecret(m.HostCookieKey)
	if !strings.HasPrefix(m.WorkspaceSessionID, "ws_") || m.LaunchOrigin != "http://127.0.0.1:5173" || m.ProtocolVersion != 1 {
		t.Fatalf("mint %+v", m.SessionInfo)
	}
	caps := contract.Capabilities{ReadOnly: true, CanNavigateSource: true, CanProposeSourceEdits: true}
	if m.Capabilities != caps {
		t.Fatalf("capabilities %+v", m.Capabilities)
	}
	for _, s := range []string{m.ViewCredential, m.HostCookieKey} {
		if !secretPattern.MatchString(s) {
			t.Fatalf("secret is not 256-bit URL-safe base64: %d chars", len(s))
		}
		if raw, err := base64.RawURLEncoding.DecodeString(s); err != nil || len(raw) != 32 {
			t.Fatal("secret does not decode to 32 bytes")
		}
	}
	if m.ViewCredential == m.HostCookieKey {
		t.Fatal("credentials repeat")
	}
	exp, err := time.Parse(time.RFC3339, m.ExpiresAt)
	if err != nil || exp.Before(before.Add(120*time.Second)) || exp.After(time.Now().Add(122*time.Second)) {
		t.Fatalf("expiresAt %q for ttl 120 (%v)", m.ExpiresAt, err)
	}
	// Defaults: canProposeSourceEdits false, TTL 8 h.
	m2 := p.mintFor(t, localclient.MintOptions{LaunchOrigin: "http://127.0.0.1:5173"})
	exp2, _ := time.Parse(time.RFC3339, m2.ExpiresAt)
	if m2.Capabilities.CanProposeSourceEdits || exp2.Before(before.Add(8*time.Hour)) || exp2.After(time.Now().Add(8*time.Hour+2*time.Second)) {
		t.Fatalf("defaults: %+v", m2.SessionInfo)
	}
}

func TestSessionMintTTLClamp(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	for _, c := range []struct {
		ttl  int64
		want time.Duration
	}{{-30, time.Second}, {0, time.Second}, {86400 * 5, 24 * time.Hour}, {86400, 24 * time.Hour}} {
		before := time.Now().UTC().Truncate(time.Second)
		status, body := mintRaw(p, sessionToken, fmt.Sprintf(`{"launchOrigin":"http://127.0.0.1:1","ttlSeconds":%d}`, c.ttl))
		var m localclient.Minted
		_ = json.Unmarshal(body, &m)
		p.AddSecret(m.ViewCredential)
		p.AddSecret(m.HostCookieKey)
		exp, _ := time.Parse(time.RFC3339, m.ExpiresAt)
		if status != 201 || exp.Before(before.Add(c.want)) || exp.After(time.Now().Add(c.want+2*time.Second)) {
			t.Errorf("ttl %d: %d expiresAt %s, want about now+%v", c.ttl, status, m.ExpiresAt, c.want)
		}
	}
}

func TestSessionMintOriginNormalization(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	good := map[string]string{
		"http://127.0.0.1:5173":   "http://127.0.0.1:5173",
		"HTTP://LOCALHOST:5173/":  "http://localhost:5173",
		"https://Example.COM:443": "https://example.com",
		"http://example.com:80/":  "http://example.com",
		"http://[::1]:8080":       "http://[::1]:8080",
	}
	for in, want := range good {
		m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: in})
		if m.LaunchOrigin != want {
			t.Errorf("%q normalized to %q, want %q", in, m.LaunchOrigin, want)
		}
	}
	for _, in := range []string{"ws://127.0.0.1:5173", "http://u:p@127.0.0.1:5173", "http://127.0.0.1:5173/app",
		"http://127.0.0.1:5173?x=1", "http://127.0.0.1:5173#f", "null", "", "file:///tmp", "127.0.0.1:5173"} {
		body, _ := json.Marshal(map[string]string{"launchOrigin": in})
		if status, out := mintRaw(p, sessionToken, string(body)); status != 400 || errorCode(out) != "INVALID_MESSAGE" {
			t.Errorf("origin %q: %d %s, want 400 INVALID_MESSAGE", in, status, out)
		}
	}
}

func TestSessionMintRequiresToken(t *testing.T) {
	t.Parallel()
	inert := startServe(t, procOptions{Args: []string{"--no-builtin"}})
	if status, _ := mintRaw(inert, "anything", `{"launchOrigin":"http://127.0.0.1:1"}`); status != 404 {
		t.Fatalf("inert broker minted: %d", status)
	}
	p := startSessions(t)
	for name, tok := range map[string]string{"missing": "", "wrong": "nope", "prefix": sessionToken[:10], "longer": sessionToken + "x"} {
		if status, out := mintRaw(p, tok, `{"launchOrigin":"http://127.0.0.1:1"}`); status != 401 || errorCode(out) != "INVALID_CREDENTIALS" {
			t.Errorf("%s token: %d %s", name, status, out)
		}
	}
	for name, body := range map[string]string{
		"unknown field": `{"launchOrigin":"http://127.0.0.1:1","admin":true}`,
		"no origin":     `{"ttlSeconds":5}`,
		"not json":      `launchOrigin=x`,
		"ttl fraction":  `{"launchOrigin":"http://127.0.0.1:1","ttlSeconds":1.5}`,
		"over 1 MiB":    `{"launchOrigin":"http://127.0.0.1:1","x":"` + strings.Repeat("a", 1<<20) + `"}`,
	} {
		if status, out := mintRaw(p, sessionToken, body); status != 400 || errorCode(out) != "INVALID_MESSAGE" {
			t.Errorf("%s: %d %.80s", name, status, out)
		}
	}
	if v := p.metric(t, `airlock_auth_refusals_total{code="invalid-credentials",endpoint="sessions"}`); v != 4 {
		t.Errorf("auth refusals for sessions: %v", v)
	}
}

func TestSessionMintLimit(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_LOCAL_MAX_SESSIONS=2")
	p.mintFor(t, localclient.MintOptions{})
	p.mintFor(t, localclient.MintOptions{})
	if status, out := mintRaw(p, sessionToken, `{"launchOrigin":"http://127.0.0.1:1"}`); status != 503 || errorCode(out) != "UNAVAILABLE" {
		t.Fatalf("third mint: %d %s", status, out)
	}
	if v := p.metric(t, "airlock_sessions_minted_total"); v != 2 {
		t.Fatalf("minted_total %v", v)
	}
}

// setCookies returns the raw Set-Cookie headers as sent on the wire.
func setCookies(h http.Header) []string { return h.Values("Set-Cookie") }

func bootstrapRaw(p *proc, origin, id, cred string, extra map[string]string) (int, []byte, http.Header) {
	body, _ := json.Marshal(map[string]string{"workspaceSessionId": id, "viewCredential": cred})
	h := map[string]string{"Content-Type": "application/json"}
	if origin != "" {
		h["Origin"] = origin
	}
	for k, v := range extra {
		h[k] = v
	}
	return p.do("POST", "/local/bootstrap", h, body)
}

func TestSessionBootstrapCookie(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	sent := time.Now() // the broker answers later: at most expiresAt - sent is left then
	status, body, h := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil)
	if status != 200 {
		t.Fatalf("bootstrap %d %s", status, body)
	}
	raw := setCookies(h)
	if len(raw) != 1 {
		t.Fatalf("Set-Cookie headers: %d", len(raw))
	}
	sum := sha256.Sum256([]byte(m.LaunchOrigin))
	name := "tensorviz_local_browser_" + hex.EncodeToString(sum[:])[:16]
	parts := strings.Split(raw[0], "; ")
	nv, attrs := parts[0], parts[1:]
	cname, value, _ := strings.Cut(nv, "=")
	p.AddSecret(value)
	slices.Sort(attrs)
	// Max-Age ends the cookie with the session: at most the seconds left.
	exp, _ := time.Parse(time.RFC3339, m.ExpiresAt)
	var maxAge int64
	if len(attrs) == 4 {
		maxAge, _ = strconv.ParseInt(strings.TrimPrefix(attrs[1], "Max-Age="), 10, 64)
	}
	if cname != name || len(attrs) != 4 || !slices.Equal([]string{attrs[0], attrs[2], attrs[3]}, []string{"HttpOnly", "Path=/local", "SameSite=Strict"}) ||
		maxAge < 1 || maxAge > int64(exp.Sub(sent)/time.Second) {
		t.Fatalf("Set-Cookie %s=… attributes %v; want %s with HttpOnly, Max-Age (1 to the %v left), Path=/local, SameSite=Strict only",
			cname, attrs, name, exp.Sub(sent).Truncate(time.Second))
	}
	if !secretPattern.MatchString(value) || value == m.ViewCredential || value == m.HostCookieKey {
		t.Fatal("the cookie value must be a fresh opaque key, not a credential")
	}
	var info map[string]any
	_ = json.Unmarshal(body, &info)
	var keys []string
	for k := range info {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"capabilities", "expiresAt", "launchOrigin", "protocolVersion", "viewKey", "workspaceSessionId"}) {
		t.Fatalf("bootstrap body keys %v", keys)
	}
	// The view key is fresh: not the cookie key, not a credential.
	viewKey, _ := info["viewKey"].(string)
	p.AddSecret(viewKey)
	if !secretPattern.MatchString(viewKey) || viewKey == value || viewKey == m.ViewCredential || viewKey == m.HostCookieKey {
		t.Fatal("the view key must be a fresh opaque key")
	}
	for _, secret := range []string{m.ViewCredential, m.HostCookieKey, value} {
		if strings.Contains(string(body), secret) {
			t.Fatal("a secret is in the bootstrap body")
		}
	}
	if h.Get("Cache-Control") != "no-store" {
		t.Fatalf("Cache-Control %q", h.Get("Cache-Control"))
	}
}

func TestSessionBootstrapSecureCookieForHTTPS(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: "https://127.0.0.1:8443"})
	status, _, h := bootstrapRaw(p, "https://127.0.0.1:8443", m.WorkspaceSessionID, m.ViewCredential, nil)
	raw := setCookies(h)
	if status != 200 || len(raw) != 1 {
		t.Fatalf("bootstrap %d", status)
	}
	nv, rest, _ := strings.Cut(raw[0], "; ")
	_, v, _ := strings.Cut(nv, "=")
	p.AddSecret(v)
	attrs := strings.Split(rest, "; ")
	attrs = slices.DeleteFunc(attrs, func(a string) bool { return strings.HasPrefix(a, "Max-Age=") })
	slices.Sort(attrs)
	if !slices.Equal(attrs, []string{"HttpOnly", "Path=/local", "SameSite=Strict", "Secure"}) {
		t.Fatalf("https cookie attributes %v", attrs)
	}
}

func TestSessionBootstrapRefusalOrder(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	o, id, cred := m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential
	cases := []struct {
		name             string
		origin, id, cred string
		status           int
		code             string
	}{
		{"unknown session, wrong origin", "http://evil.example", "ws_nope", cred, 401, "INVALID_CREDENTIALS"},
		{"wrong origin, right credential", "http://evil.example", id, cred, 403, "INVALID_ORIGIN"},
		{"missing origin", "", id, cred, 403, "INVALID_ORIGIN"},
		{"wrong credential", o, id, "AAAA", 401, "INVALID_CREDENTIALS"},
		{"host key as view credential", o, id, m.HostCookieKey, 401, "INVALID_CREDENTIALS"},
		{"empty credential", o, id, "", 401, "INVALID_CREDENTIALS"},
	}
	for _, c := range cases {
		status, body, h := bootstrapRaw(p, c.origin, c.id, c.cred, nil)
		if status != c.status || errorCode(body) != c.code || len(setCookies(h)) != 0 {
			t.Errorf("%s: %d %s, want %d %s and no cookie", c.name, status, body, c.status, c.code)
		}
	}
	if status, _, _ := bootstrapRaw(p, o, id, cred, nil); status != 200 {
		t.Fatalf("a failed bootstrap used the credential up: %d", status)
	}
	if status, body, _ := bootstrapRaw(p, o, id, cred, nil); status != 401 || errorCode(body) != "INVALID_CREDENTIALS" {
		t.Fatalf("replayed credential: %d %s", status, body)
	}
	for _, refused := range []string{"invalid-credentials", "invalid-origin"} {
		if v := p.metric(t, `airlock_auth_refusals_total{code="`+refused+`",endpoint="bootstrap"}`); v < 1 {
			t.Errorf("no bootstrap refusal counted for %s", refused)
		}
	}
}

// TestSessionExpiryTombstoneReaper: at expiresAt every socket closes 4402,
// bootstrap answers 410 and revoked cookies 4402 for the retention window,
// then the reaper deletes the session (401, 4401) and the gauges return to
// zero.
func TestSessionExpiryTombstoneReaper(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "LOCAL_BROWSER_TOMBSTONE_RETENTION_SECONDS=3")
	m := p.mintFor(t, localclient.MintOptions{TTLSeconds: 2})
	ck := p.bootstrap(t, m)
	host, _ := p.host(t, m)
	v1, _ := p.view(t, m, ck)
	host.expect("viewState")
	v2, _ := p.view(t, m, ck)
	host.expect("viewState")
	for _, s := range []*sock{host, v1, v2} {
		s.closed(4402, "CREDENTIAL_EXPIRED")
	}
	if v := p.metric(t, `airlock_sessions{state="tombstone"}`); v != 1 {
		t.Fatalf("tombstone gauge %v", v)
	}
	status, body, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil)
	if status != 410 || errorCode(body) != "CREDENTIAL_EXPIRED" {
		t.Fatalf("bootstrap on a tombstone: %d %s", status, body)
	}
	for name, c := range map[string]*http.Cookie{"host": {Name: contract.HostCookie, Value: m.HostCookieKey}, "view": ck.Cookie} {
		s := p.dial(t, name, localclient.DialOptions{Origin: m.LaunchOrigin, Cookies: []*http.Cookie{c}, ViewKey: ck.Key})
		s.closed(4402, "CREDENTIAL_EXPIRED")
	}
	testkit.Eventually(t, "the reaper deletes the tombstone", func() bool {
		status, _, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil)
		return status == 401
	})
	s := p.dial(t, "host after reaping", localclient.DialOptions{Origin: m.LaunchOrigin,
		Cookies: []*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}}})
	s.closed(4401, "INVALID_CREDENTIALS")
	if live, tomb := p.metric(t, `airlock_sessions{state="live"}`), p.metric(t, `airlock_sessions{state="tombstone"}`); live != 0 || tomb != 0 {
		t.Fatalf("sessions accumulate: live %v tombstone %v", live, tomb)
	}
}

// TestSessionEndedByTheTokenHolder: DELETE /local/sessions/{id} ends a
// session as expiry would, at once: its sockets close 4402, it answers
// 410, and its secrets open nothing. PROTOCOL section 2.1.
func TestSessionEndedByTheTokenHolder(t *testing.T) {
	t.Parallel()
	p := startSessions(t)
	s := connect(t, p, 1, localclient.MintOptions{})
	other := connect(t, p, 1, localclient.MintOptions{})
	path := "/local/sessions/" + s.m.WorkspaceSessionID
	if code, body, _ := p.do("DELETE", path, nil, nil); code != 401 || errorCode(body) != "INVALID_CREDENTIALS" {
		t.Fatalf("DELETE without the token: %d %s", code, body)
	}
	s.host.send("focusNode", map[string]any{"nodeId": "still-live"}, 1)
	s.views[0].expect("focusNode")
	token := map[string]string{contract.TokenHeader: sessionToken}
	if code, body, _ := p.do("DELETE", path, token, nil); code != 204 || len(body) != 0 {
		t.Fatalf("DELETE: %d %s, want 204 and no body", code, body)
	}
	s.host.closed(4402, "CREDENTIAL_EXPIRED")
	s.views[0].closed(4402, "CREDENTIAL_EXPIRED")
	if status, body, _ := bootstrapRaw(p, s.m.LaunchOrigin, s.m.WorkspaceSessionID, s.m.ViewCredential, nil); status != 410 {
		t.Fatalf("bootstrap of an ended session: %d %s", status, body)
	}
	host := p.dial(t, "host after end", localclient.DialOptions{Origin: s.m.LaunchOrigin,
		Cookies: []*http.Cookie{s.hostCookie()}})
	host.closed(4402, "CREDENTIAL_EXPIRED")
	if code, _, _ := p.do("DELETE", path, token, nil); code != 204 {
		t.Errorf("ending it again: %d, want 204", code)
	}
	if code, body, _ := p.do("DELETE", "/local/sessions/ws_neverminted000000000000", token, nil); code != 404 || errorCode(body) != "NOT_FOUND" {
		t.Errorf("an id never minted: %d %s, want 404 NOT_FOUND", code, body)
	}
	// The other session is untouched.
	barrier(t, other.host, other.views...)
	if live := p.metric(t, `airlock_sessions{state="live"}`); live != 1 {
		t.Errorf("live sessions %v, want 1", live)
	}
}
