package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// End-to-end tests of the connection cap against clients that hold a
// connection without being served: WebSocket upgrades that never
// authenticate, and clients that never read their responses. PROTOCOL
// section 1: past the cap new connections are refused while existing
// sessions keep working; broker/SECURITY.md: a flood of slow clients cannot
// lock out /healthz or new sessions.

// holder is a raw connection that sent one request and then only reads
// (or, when it never reads, nothing at all). It never answers a close
// frame. answered is closed once the broker's first response line arrived.
type holder struct {
	c        net.Conn
	first    string
	answered chan struct{}
	wg       sync.WaitGroup
}

// holdUpgrade sends a WebSocket upgrade of path with extra header lines
// and then reads whatever comes, never writing again.
func holdUpgrade(t *testing.T, p *proc, path, extra string) *holder {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr)
	must(t, err)
	h := &holder{c: c, answered: make(chan struct{})}
	t.Cleanup(h.Close)
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n", path, p.Addr, extra)
	must(t, err)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		h.first = line
		close(h.answered)
		_, _ = io.Copy(io.Discard, br)
	}()
	return h
}

// waitAnswered waits for the broker's response line.
func (h *holder) waitAnswered(t *testing.T) string {
	t.Helper()
	testkit.Eventually(t, "the upgrade is answered", func() bool {
		select {
		case <-h.answered:
			return true
		default:
			return false
		}
	})
	return h.first
}

// Close ends the holder; idempotent.
func (h *holder) Close() {
	_ = h.c.Close()
	h.wg.Wait()
}

// stillServes checks, with the cap full of attackers, that /healthz
// answers 200, the live session relays, and a new session can be minted
// and connected.
func stillServes(t *testing.T, p *proc, s *session, seq int64) {
	t.Helper()
	if code, body := healthz(t, p); code != 200 {
		t.Fatalf("healthz with the cap full: %d %s", code, body)
	}
	s.relays(t, seq)
	fresh := connect(t, p, 1, localclient.MintOptions{})
	fresh.relays(t, 1)
}

func TestConnectionCapEvictsUnauthenticatedUpgrades(t *testing.T) {
	t.Parallel()
	const maxConns = 32
	// Every other bound is long, so nothing but the cap can free a slot:
	// a socket waiting for hello stays until the cap deals with it.
	p := startSessions(t, fmt.Sprint("AIRLOCK_HTTP_MAX_CONNECTIONS=", maxConns),
		"AIRLOCK_HTTP_HEADER_TIMEOUT_MS=600000", "AIRLOCK_HTTP_IDLE_TIMEOUT_MS=600000",
		"AIRLOCK_LOCAL_HANDSHAKE_TIMEOUT_MS=600000")
	s := connect(t, p, 2, localclient.MintOptions{})
	own := "Origin: " + p.URL() + "\r\n"
	kinds := []struct{ path, extra string }{
		{"/channel", ""}, // no Origin: must say hello, never does
		{"/channel", "Origin: http://evil.example\r\n"}, // foreign Origin: must say hello, never does
		{"/channel", "Origin: http://127.0.0.1:1\r\n"},  // another loopback port: refused
		{"/channel", own},      // loopback Origin without the cookie
		{"/local/channel", ""}, // same endpoint, never says hello
		{"/local/ws", own},     // no cookie: refused
		{"/local/ws", own + "Cookie: " + s.ck.String() + "\r\n"}, // never says hello
	}
	for i := range maxConns + 8 {
		k := kinds[i%len(kinds)]
		holdUpgrade(t, p, k.path, k.extra).waitAnswered(t)
	}
	stillServes(t, p, s, 1)
	if n := p.metric(t, `airlock_connections_evicted_total{phase="upgrade"}`); n < 1 {
		t.Errorf("upgrades evicted: %v, want at least 1", n)
	}
	// A second wave, with the cap full of established sockets among them:
	// the live ones are never the ones closed.
	for i := range maxConns {
		k := kinds[i%len(kinds)]
		holdUpgrade(t, p, k.path, k.extra).waitAnswered(t)
	}
	stillServes(t, p, s, 2)
}

func TestConnectionCapEvictsClientsThatNeverRead(t *testing.T) {
	t.Parallel()
	const maxConns = 32
	// The write bound is long, so only the cap can free a slot held by a
	// client that never reads.
	p := startSessions(t, fmt.Sprint("AIRLOCK_HTTP_MAX_CONNECTIONS=", maxConns),
		"AIRLOCK_HTTP_HEADER_TIMEOUT_MS=600000", "AIRLOCK_HTTP_IDLE_TIMEOUT_MS=600000",
		"AIRLOCK_HTTP_WRITE_TIMEOUT_MS=600000")
	s := connect(t, p, 2, localclient.MintOptions{})
	// A static file of the view page (25 KB) is cheap to serve however
	// loaded the machine is, and 400 of them fill the socket buffers
	// (at most 4 MiB here) at once; /metrics would cost a gathering per
	// response, so under load the broker could take minutes to block.
	req := strings.Repeat(fmt.Sprintf("GET /local/view/client/wire.js HTTP/1.1\r\nHost: %s\r\n\r\n", p.Addr), 400)
	for range maxConns + 8 {
		c, err := net.Dial("tcp", p.Addr)
		must(t, err)
		if tc, ok := c.(*net.TCPConn); ok {
			must(t, tc.SetReadBuffer(4096))
		}
		t.Cleanup(func() { _ = c.Close() })
		// Pipelined requests whose responses are never read: the broker's
		// writes fill the socket buffers and block. The write of the
		// requests may itself block once the broker stops reading, so it
		// runs on its own; closing the connection ends it.
		go func() { _, _ = io.WriteString(c, req) }()
	}
	// Wait until the broker is blocked writing to them and the cap has
	// made room by closing one: until they stall, they are requests being
	// served, which the cap leaves alone. Each poll is a new connection
	// (a refused poll reads nothing). If it never happens, say what the
	// cap did instead.
	var body string
	var last error // the last refused attempt to get in, below
	defer func() {
		if t.Failed() {
			if last != nil {
				t.Logf("last attempt to get in: %v", last)
			}
			for l := range strings.Lines(body) {
				if strings.HasPrefix(l, "airlock_connections_") {
					t.Logf("last poll: %s", strings.TrimSpace(l))
				}
			}
		}
	}()
	testkit.Eventually(t, "a client that never reads is evicted", func() bool {
		if code, b, err := tryGet(p, "/metrics"); err == nil && code == 200 {
			body = b
		}
		return strings.Contains(body, `airlock_connections_evicted_total{phase="writing"} `) &&
			!strings.Contains(body, `airlock_connections_evicted_total{phase="writing"} 0`)
	})
	// The live session never waits on the cap.
	s.relays(t, 1)
	// Each of the others becomes evictable only once its socket buffers
	// are full; until then it is a request being served, and a new
	// connection that finds every slot so is refused (503). On a loaded
	// machine the last of them can take seconds to stall, so /healthz and
	// a new session must come to be admitted: each attempt is a new
	// connection, and a refused one leaves nothing open.
	testkit.Eventually(t, "/healthz answers with the cap full of clients that never read", func() bool {
		code, _, err := tryHealthz(p)
		last = fmt.Errorf("status %d, %v", code, err)
		return err == nil && code == 200
	})
	var fresh *session
	testkit.Eventually(t, "a new session connects with the cap full of clients that never read", func() bool {
		fresh, last = p.tryConnect(t, 1, localclient.MintOptions{})
		return last == nil
	})
	fresh.relays(t, 1)
}
