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
// the fetch host function (ABI.md). Bodies are base64, as encoding/json
// encodes []byte.
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

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// public reports whether ip is a globally routable unicast address:
// not private, loopback, link-local, unspecified, CGNAT or multicast.
func public(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	return !(ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || cgnat.Contains(ip) || thisNetwork.Contains(ip) || ip == broadcast)
}
