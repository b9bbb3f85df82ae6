package httpx

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CanonicalOrigin turns s into the exact string a browser sends in its
// Origin header: scheme http or https, scheme and host lower-cased, the
// default port dropped, a lone trailing "/" dropped. Userinfo, any other
// path, a query or a fragment are refused (ok false), so later checks can
// be plain string equality. Only printable ASCII is accepted: a browser
// serializes an origin's host in ASCII (punycode), so any other character
// could never match an Origin header and could only smuggle a control or
// bidirectional character into logs and pages.
func CanonicalOrigin(s string) (origin string, ok bool) {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' || r == '%' }) {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") || (u.Path != "" && u.Path != "/") {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.HasSuffix(u.Host, ":") && port == "" {
		return "", false
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" {
		return u.Scheme + "://" + host, true
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", false
	}
	if (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
		return u.Scheme + "://" + host, true
	}
	return u.Scheme + "://" + host + ":" + strconv.Itoa(n), true
}

// ForeignOrigin reports whether origin is an http(s) origin, written
// exactly as a browser writes it, whose host cannot be this machine: not
// localhost or a name under .localhost (browsers resolve those to
// loopback themselves), not a loopback or unspecified address. A page on
// this machine, a browser extension or an editor's webview (another
// scheme, or null), and any value no browser sends, are not foreign.
func ForeignOrigin(origin string) bool {
	canon, ok := CanonicalOrigin(origin)
	if !ok || canon != origin {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		return !ip.IsLoopback() && !ip.IsUnspecified()
	}
	// A browser writes a host whose last label is a number as a dotted
	// quad (127.1 becomes 127.0.0.1), so such a host is not one it sends.
	last := host[strings.LastIndexByte(host, '.')+1:]
	return last != "" && (last[0] < '0' || last[0] > '9')
}
