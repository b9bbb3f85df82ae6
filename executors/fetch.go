package executors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlock/airlock/executors/wire"
)

// maxRedirects is how many redirects one fetch follows; the next one
// fails the fetch.
const maxRedirects = 5

var (
	errHostNotAllowed = errors.New("executors: host not allowed")
	errTooManyHops    = errors.New("executors: too many redirects")
	errCallEnded      = errors.New("executors: call context ended during a fetch")
)

// fetchRequest and fetchResponse are the JSON the guest exchanges with
// the fetch host function (plugins/sdk/ABI.md). Bodies are base64, as
// encoding/json encodes []byte.
type fetchRequest struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

type fetchResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// fetch performs one guest fetch and returns the response JSON, or ends
// the call. Order: the request must decode (else exec-threw), its host
// must be allowed (host-not-allowed), the budget must have room
// (budget-exhausted); only then is the fetch counted in requestsUsed and
// started. A redirect or dial that leaves the allowlist ends the call as
// host-not-allowed; any other failure as fetch-failed, unless our own
// deadline caused it, which is exec-timeout.
func (r *Runtime) fetch(s *callState, raw []byte) []byte {
	var req fetchRequest
	if json.Unmarshal(raw, &req) != nil {
		s.stop(wire.ExecThrew)
	}
	u, err := url.Parse(req.URL)
	if err != nil || !s.allowed(u) {
		s.stop(wire.HostNotAllowed)
	}
	if s.used >= s.p.d.Bounds.MaxRequests {
		s.stop(wire.BudgetExhausted)
	}
	s.used++
	resp, err := r.roundTrip(s, req, u)
	if err != nil {
		s.logger().Info("fetch did not complete", "host", u.Host, "err", withoutURL(err))
		switch {
		case errors.Is(err, errHostNotAllowed):
			s.stop(wire.HostNotAllowed)
		case s.ctx.Err() != nil:
			panic(errCallEnded) // the context ended it; verdict tells ours from the caller's
		}
		s.stop(wire.FetchFailed)
	}
	out, _ := json.Marshal(resp)
	return out
}

func (r *Runtime) roundTrip(s *callState, req fetchRequest, u *url.URL) (fetchResponse, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	hreq, err := http.NewRequestWithContext(s.ctx, method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return fetchResponse{}, err
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	client := &http.Client{Transport: r.transport, CheckRedirect: s.checkRedirect}
	resp, err := client.Do(hreq)
	if err != nil {
		return fetchResponse{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(r.cfg.MaxFetchBytes)+1))
	if err != nil {
		return fetchResponse{}, err
	}
	if len(body) > r.cfg.MaxFetchBytes {
		return fetchResponse{}, fmt.Errorf("executors: response body over %d bytes", r.cfg.MaxFetchBytes)
	}
	return fetchResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// withoutURL drops the URL net/http puts in its errors: a query string
// may hold a credential, and the log only needs the host and the cause.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// checkRedirect re-applies the allowlist to every hop.
func (s *callState) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return errTooManyHops
	}
	if !s.allowed(req.URL) {
		return errHostNotAllowed
	}
	return nil
}

// allowed reports whether u is http(s) to a host[:port] in allowedHosts,
// compared exactly, with the port only when it is not the scheme's
// default.
func (s *callState) allowed(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") &&
		u.Host != "" && slices.Contains(s.p.d.Bounds.AllowedHosts, hostKey(u))
}

// hostKey is u's host as an allowlist entry: lower case, default port
// dropped, IPv6 in brackets.
func hostKey(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		return host
	}
	return host + ":" + port
}

// newTransport is the one transport every fetch shares (connection reuse
// across calls). It never uses a proxy from the environment, and its
// dialer refuses non-public addresses unless the URL named an IP literal.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            guardedDial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// guardedDial checks the address actually dialled, after DNS, so a name
// that resolves (or re-resolves) to a private address is refused: the
// allowlist names hosts, and DNS rebinding must not turn a public name
// into a door to the loopback. An allowlisted IP literal is the
// operator's explicit choice and is dialled as written.
func guardedDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if _, err := netip.ParseAddr(host); err != nil {
		d.Control = refusePrivate
	}
	return d.DialContext(ctx, network, addr)
}

func refusePrivate(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return errHostNotAllowed
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !public(ip) {
		return errHostNotAllowed
	}
	return nil
}

// specialPurpose is every entry of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries, plus the multicast, reserved and deprecated blocks of
// the address-space registries, as one table. An address in an entry is
// refused, except that an entry with embedded >= 0 carries an IPv4
// address at that byte offset and is judged by it: NAT64 and 6to4 reach
// whatever IPv4 address they wrap. IPv4-mapped addresses are unmapped
// before the table is read. Entries the registries mark globally
// reachable (AS112, AMT, the anycast services) are refused too: a tool has
// no business with them, and one rule is easier to check than exceptions.
// See RATIONALE.md, "Why does fetch refuse whole registries?".
var specialPurpose = []struct {
	prefix   netip.Prefix
	embedded int // byte offset of an embedded IPv4 address, or -1
}{
	// IPv4 Special-Purpose Address Registry.
	{netip.MustParsePrefix("0.0.0.0/8"), -1},       // "This network" (0.0.0.0/32 "this host" inside)
	{netip.MustParsePrefix("10.0.0.0/8"), -1},      // Private-Use
	{netip.MustParsePrefix("100.64.0.0/10"), -1},   // Shared Address Space (CGNAT)
	{netip.MustParsePrefix("127.0.0.0/8"), -1},     // Loopback
	{netip.MustParsePrefix("169.254.0.0/16"), -1},  // Link Local
	{netip.MustParsePrefix("172.16.0.0/12"), -1},   // Private-Use
	{netip.MustParsePrefix("192.0.0.0/24"), -1},    // IETF Protocol Assignments (DS-Lite, PCP and TURN anycast, NAT64 discovery)
	{netip.MustParsePrefix("192.0.2.0/24"), -1},    // Documentation (TEST-NET-1)
	{netip.MustParsePrefix("192.31.196.0/24"), -1}, // AS112-v4
	{netip.MustParsePrefix("192.52.193.0/24"), -1}, // AMT
	{netip.MustParsePrefix("192.88.99.0/24"), -1},  // Deprecated (6to4 Relay Anycast)
	{netip.MustParsePrefix("192.168.0.0/16"), -1},  // Private-Use
	{netip.MustParsePrefix("192.175.48.0/24"), -1}, // Direct Delegation AS112 Service
	{netip.MustParsePrefix("198.18.0.0/15"), -1},   // Benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), -1}, // Documentation (TEST-NET-2)
	{netip.MustParsePrefix("203.0.113.0/24"), -1},  // Documentation (TEST-NET-3)
	{netip.MustParsePrefix("224.0.0.0/4"), -1},     // Multicast (IPv4 address space registry)
	{netip.MustParsePrefix("240.0.0.0/4"), -1},     // Reserved, and Limited Broadcast 255.255.255.255/32
	// IPv6 Special-Purpose Address Registry.
	{netip.MustParsePrefix("::/96"), -1},             // Unspecified ::/128, Loopback ::1/128, deprecated IPv4-compatible
	{netip.MustParsePrefix("::ffff:0:0:0/96"), -1},   // IPv4-translated (SIIT)
	{netip.MustParsePrefix("64:ff9b::/96"), 12},      // IPv4-IPv6 Translation (NAT64 well-known prefix)
	{netip.MustParsePrefix("64:ff9b:1::/48"), -1},    // Local-Use IPv4/IPv6 Translation
	{netip.MustParsePrefix("100::/64"), -1},          // Discard-Only Address Block
	{netip.MustParsePrefix("100:0:0:1::/64"), -1},    // Dummy IPv6 Prefix
	{netip.MustParsePrefix("2001::/23"), -1},         // IETF Protocol Assignments: Teredo 2001::/32 (a tunnel to any IPv4 client), benchmarking 2001:2::/48, AMT, AS112, ORCHID(v2), PCP/TURN anycast, Drone Remote ID
	{netip.MustParsePrefix("2001:db8::/32"), -1},     // Documentation
	{netip.MustParsePrefix("2002::/16"), 2},          // 6to4
	{netip.MustParsePrefix("2620:4f:8000::/48"), -1}, // Direct Delegation AS112 Service
	{netip.MustParsePrefix("3fff::/20"), -1},         // Documentation
	{netip.MustParsePrefix("5f00::/16"), -1},         // Segment Routing (SRv6) SIDs
	{netip.MustParsePrefix("fc00::/7"), -1},          // Unique-Local
	{netip.MustParsePrefix("fe80::/10"), -1},         // Link-Local Unicast
	{netip.MustParsePrefix("fec0::/10"), -1},         // Site-local, deprecated (IPv6 address space registry)
	{netip.MustParsePrefix("ff00::/8"), -1},          // Multicast (IPv6 address space registry)
}

// globalUnicast is the only IPv6 space IANA allocates for global unicast
// (IPv6 address space registry); everything outside it that the table
// does not name is reserved, and refused.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// public reports whether ip is a globally routable unicast address: in
// no entry of specialPurpose (an embedded IPv4 address judged as itself),
// and for IPv6, inside global unicast space. The zone is irrelevant.
func public(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return false
	}
	for _, sp := range specialPurpose {
		if !sp.prefix.Contains(ip) {
			continue
		}
		if sp.embedded < 0 {
			return false
		}
		b := ip.As16()
		return public(netip.AddrFrom4([4]byte(b[sp.embedded : sp.embedded+4])))
	}
	return ip.Is4() || globalUnicast.Contains(ip)
}
