package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// End-to-end tests of PROTOCOL section 1's slow and idle clients: a body
// must arrive within a bound, an idle keep-alive connection is closed, and
// open connections are capped without a live session or /healthz losing
// service. Slow clients are raw TCP connections, so the test controls every
// byte they send.

// slowKind is how a slow client misbehaves.
type slowKind int

const (
	slowBody    slowKind = iota // full headers, then a body one byte at a time
	slowHeaders                 // headers one byte at a time
	silent                      // connects and sends nothing
	idleAlive                   // one request answered, then idle on keep-alive
)

func (k slowKind) String() string {
	return [...]string{"slow body", "slow headers", "silent", "idle keep-alive"}[k]
}

// slowConn is one slow client. Its reader reads until the broker closes
// the connection; closed is closed then.
type slowConn struct {
	kind   slowKind
	c      net.Conn
	got    testkit.Buffer // everything the broker sent
	closed chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
}

// dialSlow connects a slow client of kind to p. An idleAlive client
// returns once its request was answered.
func dialSlow(t *testing.T, p *proc, kind slowKind) *slowConn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr)
	must(t, err)
	s := &slowConn{kind: kind, c: c, closed: make(chan struct{}), stop: make(chan struct{})}
	t.Cleanup(s.Close)
	s.wg.Add(1)
	go s.read()
	host := "Host: " + p.Addr + "\r\n"
	switch kind {
	case slowBody:
		s.write(t, "POST /local/bootstrap HTTP/1.1\r\n"+host+"Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n{")
		s.drip()
	case slowHeaders:
		s.write(t, "GET /healthz HTTP/1.1\r\n"+host+"X-Slow: ")
		s.drip()
	case idleAlive:
		s.write(t, "GET /healthz HTTP/1.1\r\n"+host+"\r\n")
		testkit.Eventually(t, "the idle client's request is answered", func() bool {
			return strings.Contains(s.got.String(), `"status":"ok"`)
		})
	}
	return s
}

func (s *slowConn) write(t *testing.T, data string) {
	t.Helper()
	if _, err := io.WriteString(s.c, data); err != nil {
		t.Fatalf("%v: write: %v", s.kind, err)
	}
}

func (s *slowConn) read() {
	defer s.wg.Done()
	_, _ = io.Copy(&s.got, s.c)
	close(s.closed)
}

// drip sends one byte every 200 ms until the client stops or the write
// fails. The ticker paces the attack; nothing waits on it.
func (s *slowConn) drip() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-s.closed:
				return
			case <-tick.C:
				if _, err := s.c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
}

// waitClosed fails the test unless the broker closes the connection; the
// test itself never closes it before.
func (s *slowConn) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(60 * time.Second):
		t.Fatalf("%v: the broker never closed the connection", s.kind)
	}
}

// Close ends the client; idempotent.
func (s *slowConn) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	_ = s.c.Close()
	s.wg.Wait()
}

// fdCount is the number of open descriptors of process pid.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(entries)
}

// relays proves the host's state still reaches its views.
func (s *session) relays(t *testing.T, seq int64) {
	t.Helper()
	s.host.send("focusNode", map[string]any{"nodeId": fmt.Sprint("n", seq)}, seq)
	for _, v := range s.views {
		m := v.expect("focusNode")
		if m.HostSequence != seq {
			t.Fatalf("%s: focusNode %s, want hostSequence %d", v.name, m.Raw, seq)
		}
	}
}

// healthz asks /healthz on a connection of its own and returns the status
// and body; a connection refused past the cap answers too.
func healthz(t *testing.T, p *proc) (int, string) {
	t.Helper()
	code, body, err := tryHealthz(p)
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	return code, body
}

// tryHealthz is healthz without the test (see tryGet).
func tryHealthz(p *proc) (int, string, error) { return tryGet(p, "/healthz") }

// tryGet asks path on a connection of its own, closed after the answer.
// While the connection cap is full the refusal's 503 can arrive before
// the request is written, which net/http reports as an error rather than
// a response: the same "not yet" to a caller waiting for the cap to free.
func tryGet(p *proc, path string) (int, string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
	resp, err := c.Get(p.URL() + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func TestSlowBodyAndIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_HTTP_BODY_TIMEOUT_MS=2000", "AIRLOCK_HTTP_IDLE_TIMEOUT_MS=2000")
	s := connect(t, p, 2, localclient.MintOptions{})
	body := dialSlow(t, p, slowBody)
	idle := dialSlow(t, p, idleAlive)
	body.waitClosed(t)
	idle.waitClosed(t)
	if got := body.got.String(); got != "" && !strings.HasPrefix(got, "HTTP/1.1 400 ") {
		t.Errorf("the slow body was answered %.80q, want nothing or 400", got)
	}
	// The sockets connected before both clients and outlived both bounds.
	s.relays(t, 1)
	// Requests that arrive in time still work, and nothing was evicted: the
	// bounds closed those clients, not the cap.
	p.mintFor(t, localclient.MintOptions{})
	if code, _ := healthz(t, p); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if n := p.metric(t, `airlock_connections_refused_total`); n != 0 {
		t.Errorf("refused %v connections below the cap", n)
	}
}

func TestConnectionCapShedsSlowClientsThenRefuses(t *testing.T) {
	t.Parallel()
	const maxConns = 64
	// The bounds are long so the slow clients stay until the cap deals with
	// them.
	p := startSessions(t, fmt.Sprint("AIRLOCK_HTTP_MAX_CONNECTIONS=", maxConns),
		"AIRLOCK_HTTP_HEADER_TIMEOUT_MS=600000", "AIRLOCK_HTTP_BODY_TIMEOUT_MS=600000", "AIRLOCK_HTTP_IDLE_TIMEOUT_MS=600000")
	s := connect(t, p, 2, localclient.MintOptions{})
	http.DefaultClient.CloseIdleConnections()
	pid := p.cmd.Process.Pid
	baseline := fdCount(t, pid)

	// Fill the cap with slow clients, more than fit: the oldest make room
	// for the newest, the first of them (a dripping body) among them.
	var slow []*slowConn
	for i := range maxConns + 8 {
		slow = append(slow, dialSlow(t, p, slowKind(i%4)))
	}
	// With the cap full of slow clients, /healthz answers and the session
	// relays; the oldest slow client, a dripping body, was closed.
	if code, body := healthz(t, p); code != 200 {
		t.Fatalf("healthz with the cap full of slow clients: %d %s", code, body)
	}
	slow[0].waitClosed(t)
	s.relays(t, 1)
	if n := p.metric(t, `airlock_connections_evicted_total{phase="body"}`); n < 1 {
		t.Errorf("slow bodies evicted: %v, want at least 1", n)
	}

	// Fill the cap with WebSockets, which are never evicted, until a new
	// connection is refused.
	var extra []*localclient.Conn
	refused := false
	for range maxConns {
		c, err := localclient.Dial(tctx(t), p.URL(), localclient.DialOptions{Origin: s.m.LaunchOrigin,
			SessionID: s.m.WorkspaceSessionID, Cookies: []*http.Cookie{s.ck}, ViewKey: s.pass.Key})
		if err != nil {
			refused = true
			break
		}
		extra = append(extra, c)
		if _, err := c.Hello(tctx(t)); err != nil {
			t.Fatalf("extra view %d: hello: %v", len(extra), err)
		}
	}
	if !refused {
		t.Fatalf("%d more views were accepted past a cap of %d", len(extra), maxConns)
	}
	for _, c := range slow {
		c.waitClosed(t)
	}
	resp, body := rawGet(t, p, "/healthz")
	if resp.StatusCode != 503 || !resp.Close || resp.Header.Get("Content-Type") != "application/json" || errorCode([]byte(body)) != "UNAVAILABLE" {
		t.Errorf("past the cap: %d close=%v %v %q, want a clean 503 UNAVAILABLE with Connection: close", resp.StatusCode, resp.Close, resp.Header, body)
	}
	// Existing sessions keep working with the cap full.
	s.relays(t, 2)

	// Once the extra sockets and the slow clients are gone, everything they
	// held is released.
	for _, c := range extra {
		c.CloseNow()
	}
	for _, c := range slow {
		c.Close()
	}
	testkit.Eventually(t, "healthz answers 200 again", func() bool {
		code, _, err := tryHealthz(p)
		return err == nil && code == 200
	})
	s.relays(t, 3)
	if n := p.metric(t, `airlock_connections_refused_total`); n < 2 {
		t.Errorf("refused connections counted %v, want at least 2", n)
	}
	http.DefaultClient.CloseIdleConnections()
	testkit.Eventually(t, fmt.Sprintf("the broker's descriptors return to %d", baseline), func() bool {
		return fdCount(t, pid) <= baseline
	})
}

// rawGet sends one GET on a connection of its own and reads the response
// and, when it says Connection: close, the close that must follow.
func rawGet(t *testing.T, p *proc, path string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr)
	must(t, err)
	defer c.Close()
	must(t, c.SetDeadline(time.Now().Add(60*time.Second)))
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, p.Addr)
	must(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Close {
		if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("GET %s: the connection stayed open after Connection: close", path)
		}
	}
	return resp, string(body)
}

// TestSlowHeadersAreClosedWithoutAnAnswer: PROTOCOL section 1.5's header
// bound. A client that sends nothing, one that never finishes its
// headers, and one that never finishes the headers of its second request
// on a keep-alive connection are all closed without an answer to the
// unfinished request, and none of it is the cap's doing.
func TestSlowHeadersAreClosedWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_HTTP_HEADER_TIMEOUT_MS=1000", "AIRLOCK_HTTP_IDLE_TIMEOUT_MS=600000")
	quiet := dialSlow(t, p, silent)
	dripping := dialSlow(t, p, slowHeaders)
	second := dialSlow(t, p, idleAlive)
	answered := second.got.String()
	second.write(t, "GET /healthz HTTP/1.1\r\nHost: "+p.Addr+"\r\nX-Slow: ")
	second.drip()
	for _, c := range []*slowConn{quiet, dripping} {
		c.waitClosed(t)
		if got := c.got.String(); got != "" {
			t.Errorf("%v: answered %.80q, want nothing", c.kind, got)
		}
	}
	second.waitClosed(t)
	if got := second.got.String(); got != answered {
		t.Errorf("keep-alive: the unfinished second request was answered: %.200q", strings.TrimPrefix(got, answered))
	}
	for _, m := range []string{`airlock_connections_refused_total`, `airlock_connections_evicted_total{phase="headers"}`} {
		if n := p.metric(t, m); n != 0 {
			t.Errorf("%s %v: the cap acted below it", m, n)
		}
	}
	if code, _ := healthz(t, p); code != 200 {
		t.Errorf("healthz %d", code)
	}
}

// TestStalledWriteIsClosedByItsBound: PROTOCOL section 1.5's write bound.
// A client that pipelines requests and never reads their responses is
// closed once a write to it stalls past http.write_timeout_ms, with the
// cap far from full, so the bound and not eviction closed it. The test
// never reads from it: the client learns of the close when its own
// writes fail.
func TestStalledWriteIsClosedByItsBound(t *testing.T) {
	t.Parallel()
	p := startSessions(t, "AIRLOCK_HTTP_WRITE_TIMEOUT_MS=1000",
		"AIRLOCK_HTTP_HEADER_TIMEOUT_MS=600000", "AIRLOCK_HTTP_IDLE_TIMEOUT_MS=600000")
	c, err := net.Dial("tcp", p.Addr)
	must(t, err)
	t.Cleanup(func() { _ = c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		must(t, tc.SetReadBuffer(4096))
	}
	// A static file of the view page, asked for again and again: each
	// response is written in full before the next request is read, so
	// the writes stall as soon as the socket buffers are full.
	req := strings.Repeat(fmt.Sprintf("GET /local/view/client/wire.js HTTP/1.1\r\nHost: %s\r\n\r\n", p.Addr), 64)
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := io.WriteString(c, req); err != nil {
				ended <- err
				return
			}
		}
	}()
	select {
	case err := <-ended:
		t.Logf("the client's writes failed: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("a client that never reads was never closed")
	}
	for _, m := range []string{`airlock_connections_refused_total`, `airlock_connections_evicted_total{phase="writing"}`} {
		if n := p.metric(t, m); n != 0 {
			t.Errorf("%s %v: the cap closed it, not the write bound", m, n)
		}
	}
	if code, _ := healthz(t, p); code != 200 {
		t.Errorf("healthz %d", code)
	}
}
