package executors

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// server is an httptest server counting its hits. Its routes:
// /ok answers "hello"; /big?n= answers n bytes; /redirect?to= redirects;
// /loop redirects to itself; /chain?n= is n redirects ending at /ok.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello")
		case "/big":
			var n int
			fmt.Sscan(r.URL.Query().Get("n"), &n)
			io.WriteString(w, strings.Repeat("b", n))
		case "/redirect":
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/chain":
			var n int
			fmt.Sscan(r.URL.Query().Get("n"), &n)
			to := "/ok"
			if n > 1 {
				to = fmt.Sprintf("/chain?n=%d", n-1)
			}
			http.Redirect(w, r, to, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// hostport is the server's "127.0.0.1:PORT".
func (s *server) hostport() string { return strings.TrimPrefix(s.URL, "http://") }

func (s *server) port() string {
	_, port, _ := net.SplitHostPort(s.hostport())
	return port
}

func fetchBounds(maxRequests int, hosts ...string) wire.Bounds {
	b := defaultBounds()
	b.MaxRequests = maxRequests
	b.AllowedHosts = hosts
	return b
}

func wantBudget(t *testing.T, a wire.Answer, used, limit int) {
	t.Helper()
	if a.Budget == nil || *a.Budget != (wire.Budget{RequestsUsed: used, RequestsLimit: limit}) {
		t.Fatalf("budget %+v, want {%d %d}", a.Budget, used, limit)
	}
}

func TestFetchAllowed(t *testing.T) {
	srv := newServer(t)
	forStyles(t, Config{}, fetchBounds(3, srv.hostport()), func(t *testing.T, p *Program) {
		a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/ok"))
		m := wantOK(t, a)
		if m["status"] != 200.0 || m["body"] != "hello" {
			t.Fatalf("fetch observed %v", m)
		}
		wantBudget(t, a, 1, 3)
		// A redirect that stays on the allowed host is followed.
		a = call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/redirect?to=/ok"))
		if m := wantOK(t, a); m["body"] != "hello" {
			t.Fatalf("redirected fetch observed %v", m)
		}
	})
}

func TestFetchHostNotAllowed(t *testing.T) {
	srv := newServer(t)
	other := newServer(t)
	forStyles(t, Config{}, fetchBounds(3, srv.hostport()), func(t *testing.T, p *Program) {
		for _, u := range []string{
			other.URL + "/ok",                        // another port on the same IP
			"http://localhost:" + srv.port() + "/ok", // same server by a name not listed
			"ftp://" + srv.hostport() + "/ok",
			"file:///etc/passwd",
			"not a url at all",
		} {
			a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, u))
			wantRule(t, a, wire.HostNotAllowed)
			wantBudget(t, a, 0, 3)
		}
		// A redirect from the allowed server to one that is not.
		a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/redirect?to="+url.QueryEscape(other.URL+"/ok")))
		wantRule(t, a, wire.HostNotAllowed)
		wantBudget(t, a, 1, 3)
	})
	if n := other.hits.Load(); n != 0 {
		t.Fatalf("the non-allowed server was reached %d times", n)
	}
}

// TestFetchNameResolvingToLoopback: "localhost:PORT" allowlisted by name
// resolves to the loopback, which the dialer refuses; the same server
// allowlisted as the IP literal 127.0.0.1:PORT is reachable.
func TestFetchNameResolvingToLoopback(t *testing.T) {
	srv := newServer(t)
	byName := "localhost:" + srv.port()
	forStyles(t, Config{}, fetchBounds(2, byName), func(t *testing.T, p *Program) {
		a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, "http://"+byName+"/ok"))
		wantRule(t, a, wire.HostNotAllowed)
		wantBudget(t, a, 1, 2)
	})
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("loopback reached %d times through a DNS name", n)
	}
}

func TestFetchBudget(t *testing.T) {
	srv := newServer(t)
	forStyles(t, Config{}, fetchBounds(2, srv.hostport()), func(t *testing.T, p *Program) {
		args := func(n int) string { return fmt.Sprintf(`{"url":%q,"n":%d}`, srv.URL+"/ok", n) }
		a := call(t, p, "fetchn", args(2))
		wantOK(t, a)
		wantBudget(t, a, 2, 2)
		a = call(t, p, "fetchn", args(3))
		wantRule(t, a, wire.BudgetExhausted)
		wantBudget(t, a, 2, 2)
		wantRefusalWhy(t, a, "the tool tried fetch 3, over bounds.maxRequests 2")
	})
	forStyles(t, Config{}, fetchBounds(0, srv.hostport()), func(t *testing.T, p *Program) {
		a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/ok"))
		wantRule(t, a, wire.BudgetExhausted)
		wantBudget(t, a, 0, 0)
		wantRefusalWhy(t, a, "the tool tried fetch 1, over bounds.maxRequests 0")
	})
}

func TestFetchFailed(t *testing.T) {
	srv := newServer(t)
	dead := testkit.ResettingAddr(t)
	forStyles(t, Config{MaxFetchBytes: 1000}, fetchBounds(3, srv.hostport(), dead), func(t *testing.T, p *Program) {
		a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, "http://"+dead+"/"))
		wantRule(t, a, wire.FetchFailed)
		wantBudget(t, a, 1, 3)
		wantOK(t, call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/big?n=1000")))
		wantRule(t, call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/big?n=1001")), wire.FetchFailed)
		wantRule(t, call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/loop")), wire.FetchFailed)
		// At most five redirects are followed.
		wantOK(t, call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/chain?n=5")))
		wantRule(t, call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/chain?n=6")), wire.FetchFailed)
	})
}

func TestFetchRespectsDeadline(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	// The deadline must cut the fetch in flight, so the fetch has to start
	// inside it. On a loaded machine the guest may not reach it within a
	// short deadline; then the call still ends exec-timeout, and the test tries again with twice the time, until the
	// server has seen the request.
	for _, st := range styles {
		t.Run(st.name, func(t *testing.T) {
			for ms := 1500; ; ms *= 2 {
				b := fetchBounds(1, strings.TrimPrefix(slow.URL, "http://"))
				b.TimeoutMs = ms
				r := newRuntime(t, Config{})
				p := load(t, r, guestDescriptor("guest", b), testkit.Fixture(t, st.file))
				before := started.Load()
				a := call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, slow.URL))
				wantRule(t, a, wire.ExecTimeout)
				if started.Load() == before && ms < 60_000 {
					t.Logf("the fetch had not started within %d ms; trying again with more time", ms)
					continue
				}
				wantBudget(t, a, 1, 1)
				return
			}
		})
	}
}

// TestFetchIgnoresProxyEnvironment: a proxy named in the environment is
// never used.
func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	srv := newServer(t)
	proxy := newServer(t)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	r := newRuntime(t, Config{})
	p := load(t, r, guestDescriptor("guest", fetchBounds(1, srv.hostport())), testkit.Fixture(t, "guest-reactor.wasm"))
	wantOK(t, call(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/ok")))
	if proxy.hits.Load() != 0 || srv.hits.Load() != 1 {
		t.Fatalf("proxy hits %d, server hits %d", proxy.hits.Load(), srv.hits.Load())
	}
}

func TestHostKey(t *testing.T) {
	for in, want := range map[string]string{
		"http://Example.COM/x":        "example.com",
		"http://example.com:80/":      "example.com",
		"https://example.com:443/":    "example.com",
		"http://example.com:443/":     "example.com:443",
		"https://example.com:8443/":   "example.com:8443",
		"http://127.0.0.1:9000/":      "127.0.0.1:9000",
		"http://[::1]:9000/":          "[::1]:9000",
		"http://[2001:db8::1]/":       "[2001:db8::1]",
		"http://user:pw@example.com/": "example.com",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestPublicAddresses(t *testing.T) {
	for in, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "1.1.1.1": true,
		"127.0.0.1": false, "127.5.6.7": false, "::1": false,
		"10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "fd00::1": false,
		"169.254.169.254": false, "fe80::1": false, "fe80::1%eth0": false,
		"0.0.0.0": false, "::": false, "0.1.2.3": false,
		"100.64.0.1": false, "100.127.255.254": false, "100.128.0.1": true,
		"224.0.0.1": false, "ff02::1": false, "255.255.255.255": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::ffff:8.8.8.8": true,
	} {
		if got := public(netip.MustParseAddr(in)); got != want {
			t.Errorf("public(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestRefusePrivateDialControl(t *testing.T) {
	if err := refusePrivate("tcp", "127.0.0.1:80", nil); err != errHostNotAllowed {
		t.Fatalf("loopback allowed: %v", err)
	}
	if err := refusePrivate("tcp", "[::ffff:192.168.0.1]:80", nil); err != errHostNotAllowed {
		t.Fatalf("mapped private allowed: %v", err)
	}
	if err := refusePrivate("tcp", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("public refused: %v", err)
	}
}
