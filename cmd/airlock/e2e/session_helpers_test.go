package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/localclient"
)

// Helpers of the session and relay end-to-end tests: a broker with a
// launch token, minting and bootstrapping with every secret registered so
// the harness fails if one reaches the broker's output, and sockets for
// both roles.

const sessionToken = "e2e-session-launch-token-6b1f0c2d9a"

// startSessions starts `airlock serve` with a launch token, no bundled
// plugins and extra environment.
func startSessions(t *testing.T, env ...string) *proc {
	t.Helper()
	return startServe(t, procOptions{
		Args:    []string{"--no-builtin", "--log-level", "debug"},
		Env:     append([]string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}, env...),
		Secrets: []string{sessionToken},
	})
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (p *proc) client() *localclient.Client {
	return &localclient.Client{Base: p.URL(), Token: sessionToken}
}

// mintFor mints a session for origin (the broker's own when empty).
func (p *proc) mintFor(t *testing.T, o localclient.MintOptions) *localclient.Minted {
	t.Helper()
	if o.LaunchOrigin == "" {
		o.LaunchOrigin = p.URL()
	}
	m, err := p.client().Mint(tctx(t), o)
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	p.AddSecret(m.ViewCredential)
	p.AddSecret(m.HostCookieKey)
	return m
}

// bootstrap trades the view credential for the view cookie and key.
func (p *proc) bootstrap(t *testing.T, m *localclient.Minted) *localclient.ViewPass {
	t.Helper()
	pass, _, err := p.client().Bootstrap(tctx(t), m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	p.AddSecret(pass.Cookie.Value)
	p.AddSecret(pass.Key)
	return pass
}

// sock is a socket of a test, closed at cleanup.
type sock struct {
	*localclient.Conn
	t    *testing.T
	name string
}

func (p *proc) dial(t *testing.T, name string, o localclient.DialOptions) *sock {
	t.Helper()
	c, err := localclient.Dial(tctx(t), p.URL(), o)
	if err != nil {
		t.Fatalf("%s: dial: %v", name, err)
	}
	s := &sock{c, t, name}
	t.Cleanup(func() { _ = c.Close() })
	return s
}

// host connects and completes the handshake as the session's host.
func (p *proc) host(t *testing.T, m *localclient.Minted) (*sock, *localclient.Connected) {
	t.Helper()
	s, c, err := p.tryHost(t, m)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// view connects with the cookie and view key and completes the
// handshake; it consumes the connectionState that follows connected.
func (p *proc) view(t *testing.T, m *localclient.Minted, pass *localclient.ViewPass) (*sock, *localclient.Connected) {
	t.Helper()
	s, c, err := p.tryView(t, m, pass)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// tryHost is host that returns what failed instead of failing t.
func (p *proc) tryHost(t *testing.T, m *localclient.Minted) (*sock, *localclient.Connected, error) {
	return p.tryHello(t, "host", localclient.DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID,
		Cookies: []*http.Cookie{{Name: contract.HostCookie, Value: m.HostCookieKey}}})
}

// tryView is view that returns what failed instead of failing t.
func (p *proc) tryView(t *testing.T, m *localclient.Minted, pass *localclient.ViewPass) (*sock, *localclient.Connected, error) {
	s, c, err := p.tryHello(t, "view", localclient.DialOptions{Origin: m.LaunchOrigin, SessionID: m.WorkspaceSessionID,
		Cookies: []*http.Cookie{pass.Cookie}, ViewKey: pass.Key})
	if err != nil {
		return nil, nil, err
	}
	s.name = "view " + c.ViewID
	s.expect("connectionState")
	return s, c, nil
}

// tryHello dials as name and completes the handshake; the socket is
// closed at cleanup, or at once when the handshake fails.
func (p *proc) tryHello(t *testing.T, name string, o localclient.DialOptions) (*sock, *localclient.Connected, error) {
	c, err := localclient.Dial(tctx(t), p.URL(), o)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: dial: %w", name, err)
	}
	connected, err := c.Hello(tctx(t))
	if err != nil {
		c.CloseNow()
		return nil, nil, fmt.Errorf("%s hello: %w", name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &sock{c, t, name}, connected, nil
}

func (s *sock) send(typ string, payload any, seq int64) {
	s.t.Helper()
	if err := s.Send(tctx(s.t), typ, payload, seq); err != nil {
		s.t.Fatalf("%s: send %s: %v", s.name, typ, err)
	}
}

func (s *sock) sendRaw(frame []byte) {
	s.t.Helper()
	if err := s.SendRaw(tctx(s.t), frame); err != nil {
		s.t.Fatalf("%s: send: %v", s.name, err)
	}
}

// next is the next message; the test fails if the socket closed.
func (s *sock) next() *localclient.Message {
	s.t.Helper()
	m, err := s.Receive(tctx(s.t))
	if err != nil {
		s.t.Fatalf("%s: receive: %v", s.name, err)
	}
	return m
}

// expect asserts the next message's type and returns it.
func (s *sock) expect(typ string) *localclient.Message {
	s.t.Helper()
	m := s.next()
	if m.Type != typ {
		s.t.Fatalf("%s: got %s %s, want %s", s.name, m.Type, m.Raw, typ)
	}
	return m
}

// payload decodes a message's payload into a map.
func payload(m *localclient.Message) map[string]any {
	var p map[string]any
	_ = json.Unmarshal(m.Payload, &p)
	return p
}

// refused asserts the next message is a broker error with code and detail.
func (s *sock) refused(code, detail string) *localclient.ProtocolError {
	s.t.Helper()
	m := s.next()
	pe := m.Error()
	if pe == nil || string(pe.Code) != code || pe.Detail != detail {
		s.t.Fatalf("%s: got %s, want error %s %s", s.name, m.Raw, code, detail)
	}
	return pe
}

// closed asserts the socket is closed next with code and reason, with no
// message before the close.
func (s *sock) closed(code int, reason string) {
	s.t.Helper()
	m, err := s.Receive(tctx(s.t))
	if err == nil {
		s.t.Fatalf("%s: got %s, want close %d", s.name, m.Raw, code)
	}
	if c, r := localclient.CloseStatus(err); int(c) != code || r != reason {
		s.t.Fatalf("%s: closed %d %q (%v), want %d %q", s.name, c, r, err, code, reason)
	}
}

// refusedThenClosed asserts the handshake failure shape: a typed error,
// then the paired close code with the code's name as reason.
func (s *sock) refusedThenClosed(code, detail string, closeCode int) {
	s.t.Helper()
	s.refused(code, detail)
	s.closed(closeCode, code)
}

var barrierN atomic.Int64

// barrier proves that nothing else reached the receivers: the sender
// sends an ack with a fresh marker, and each receiver's very next message
// must be that ack. A host barrier reaches every view; a view barrier
// reaches the host.
func barrier(t *testing.T, from *sock, to ...*sock) {
	t.Helper()
	mark := fmt.Sprintf("barrier-%d", barrierN.Add(1))
	from.send("ack", map[string]any{"barrier": mark}, 0)
	for _, r := range to {
		m := r.next()
		if m.Type != "ack" || payload(m)["barrier"] != mark {
			t.Fatalf("%s: got %s before the barrier: something was relayed", r.name, m.Raw)
		}
	}
}

// metric returns the value of one exposition line (name with labels, as
// printed), or -1 when absent.
func (p *proc) metric(t *testing.T, series string) float64 {
	t.Helper()
	_, body, _ := p.do("GET", "/metrics", nil, nil)
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

// errorCode decodes an HTTP error body's code.
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}

func isClose(err error) bool { return errors.Is(err, localclient.ErrClosed) }

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
