package session

import (
	"net/url"
	"strconv"
	"strings"
)

// NormalizeOrigin turns a launch origin into the exact string a browser
// sends in its Origin header: scheme http or https, scheme and host
// lower-cased, the default port dropped, a lone trailing "/" dropped.
// Userinfo, any other path, a query or a fragment are refused
// (ErrBadOrigin), so later checks can be plain string equality. Only
// printable ASCII is accepted: a browser serializes an origin's host in
// ASCII (punycode), so any other character could never match an Origin
// header and could only smuggle a control or bidirectional character
// into logs and pages.
func NormalizeOrigin(s string) (string, error) {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' || r == '%' }) {
		return "", ErrBadOrigin
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") || (u.Path != "" && u.Path != "/") {
		return "", ErrBadOrigin
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.HasSuffix(u.Host, ":") && port == "" {
		return "", ErrBadOrigin
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" {
		return u.Scheme + "://" + host, nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", ErrBadOrigin
	}
	if (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
		return u.Scheme + "://" + host, nil
	}
	return u.Scheme + "://" + host + ":" + strconv.Itoa(n), nil
}
