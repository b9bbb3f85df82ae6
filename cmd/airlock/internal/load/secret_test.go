package load

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSecretGuard: only the exact secret passes; an empty secret admits
// nobody, not even a request without the header.
func TestSecretGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s := NewSecret()
	if len(s) != 64 || s == NewSecret() {
		t.Fatalf("secret %q", s)
	}
	for _, c := range []struct {
		secret string
		header http.Header
		want   int
	}{
		{s, SecretHeader(s), http.StatusNoContent},
		{s, nil, http.StatusUnauthorized},
		{s, SecretHeader(s[:63]), http.StatusUnauthorized},
		{s, SecretHeader(s + "0"), http.StatusUnauthorized},
		{"", nil, http.StatusUnauthorized},
		{"", SecretHeader(""), http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/calls", nil)
		for k, v := range c.header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		SecretGuard(c.secret, ok).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("secret %q, header %v: %d, want %d", c.secret, c.header, rec.Code, c.want)
		}
	}
}

// TestSecretGuardClosesRefused: a refused connection is closed rather
// than kept alive, so a stranger cannot park idle connections on a floor
// (its server has no idle timeout: the run's own connections wait out the
// other sides' turns).
func TestSecretGuardClosesRefused(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s := NewSecret()
	srv := httptest.NewServer(SecretGuard(s, ok))
	defer srv.Close()
	for _, c := range []struct {
		secret    string
		wantClose bool
	}{{"wrong", true}, {s, false}} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		req.Header = SecretHeader(c.secret)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Close != c.wantClose {
			t.Errorf("secret %q: %s, connection closed %v, want %v", c.secret, resp.Status, resp.Close, c.wantClose)
		}
	}
}
