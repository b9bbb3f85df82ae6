package session

import (
	"errors"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	ok := []struct{ in, want string }{
		{"http://127.0.0.1:5173", "http://127.0.0.1:5173"},
		{"http://127.0.0.1:5173/", "http://127.0.0.1:5173"},
		{"HTTP://LOCALHOST:5173", "http://localhost:5173"},
		{"http://LocalHost:5173/", "http://localhost:5173"},
		{"https://example.com:443", "https://example.com"},
		{"http://example.com:80", "http://example.com"},
		{"https://example.com:80", "https://example.com:80"},
		{"http://example.com:443", "http://example.com:443"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"http://[::1]:80/", "http://[::1]"},
		{"http://127.0.0.1:05173", "http://127.0.0.1:5173"},
		{"https://Sub.Example.COM", "https://sub.example.com"},
	}
	for _, c := range ok {
		got, err := NormalizeOrigin(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := []string{
		"", "127.0.0.1:5173", "ws://127.0.0.1:5173", "file:///etc/passwd", "javascript:alert(1)", "null",
		"http://user@127.0.0.1:5173", "http://user:pw@127.0.0.1:5173", "http://127.0.0.1:5173/path",
		"http://127.0.0.1:5173//", "http://127.0.0.1:5173/?", "http://127.0.0.1:5173?x=1", "http://127.0.0.1:5173#frag",
		"http://127.0.0.1:5173/#", "http://", "http://:5173", "http://127.0.0.1:", "http://127.0.0.1:0",
		"http://127.0.0.1:65536", "http://127.0.0.1:abc", "http://127.0.0.1 :5173", " http://127.0.0.1:5173",
		"http://127.0.0.1:5173\n", "http://127.0.0.\u202e1:1", "http://exämple.com", "http://127.0.0.1:5173\u2028", "http:\\\\127.0.0.1", "http://127.0.0.1%2f@evil", "http://exa mple.com",
		"http:127.0.0.1:5173", "//127.0.0.1:5173",
	}
	for _, in := range bad {
		if got, err := NormalizeOrigin(in); !errors.Is(err, ErrBadOrigin) {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want ErrBadOrigin", in, got, err)
		}
	}
}

// TestOriginLookalikes: normalization never maps a lookalike onto the
// launch origin, so exact equality refuses each.
func TestOriginLookalikes(t *testing.T) {
	launch, _ := NormalizeOrigin("http://127.0.0.1:5173")
	for _, o := range []string{
		"http://127.0.0.1:51730", "http://127.0.0.1:517", "https://127.0.0.1:5173", "http://localhost:5173",
		"http://[::1]:5173", "http://127.0.0.1.evil.com:5173", "http://evil127.0.0.1:5173", "http://127.0.0.2:5173",
		"http://127.0.0.1", "http://0x7f000001:5173", "http://2130706433:5173", "http://127.1:5173",
	} {
		got, err := NormalizeOrigin(o)
		if err == nil && got == launch {
			t.Errorf("lookalike %q normalizes to the launch origin", o)
		}
	}
}
