package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker/contract"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoopbackAuthority(t *testing.T) {
	for hp, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost:80": true, "[::1]:80": true,
		"127.0.0.1:81": false, "127.0.0.1": false, "LOCALHOST:80": false, "127.0.0.2:80": false,
		"evil.com:80": false, "localhost.evil.com:80": false, "[::ffff:127.0.0.1]:80": false, "": false,
	} {
		if LoopbackAuthority(hp, 80) != want {
			t.Errorf("LoopbackAuthority(%q) != %v", hp, want)
		}
	}
}

func TestLoopbackOrigin(t *testing.T) {
	for o, want := range map[string]bool{
		"http://127.0.0.1:80": true, "http://localhost:80": true, "http://[::1]:80": true,
		"https://127.0.0.1:80": false, "http://127.0.0.1:81": false, "http://127.0.0.1": false,
		"http://127.0.0.1:80/": false, "http://user@127.0.0.1:80": false, "null": false, "": false,
		"http://localhost.evil.com:80": false, "http://127.0.0.1:80.evil.com": false, "HTTP://127.0.0.1:80": false,
	} {
		if LoopbackOrigin(o, 80) != want {
			t.Errorf("LoopbackOrigin(%q) != %v", o, want)
		}
	}
}

func TestToken(t *testing.T) {
	tok := NewToken("secret-token")
	if !tok.Set() || !tok.Matches("secret-token") || tok.Matches("secret-toke") || tok.Matches("") || tok.Matches("secret-token ") {
		t.Error("token comparison is wrong")
	}
	if none := NewToken(""); none.Set() || none.Matches("") {
		t.Error("an empty token must match nothing")
	}
}

func TestGuards(t *testing.T) {
	var refused []string
	rec := func(endpoint string, c contract.Code) { refused = append(refused, endpoint+":"+string(c)) }
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
	h := HostGuard(func() int { return 7420 }, rec, TokenGuard(NewToken("t"), rec, ok))
	cases := []struct {
		host, token string
		status      int
	}{
		{"evil.com:7420", "t", 403},
		{"127.0.0.1:7420", "", 401},
		{"127.0.0.1:7420", "x", 401},
		{"127.0.0.1:7420", "t", 204},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/tools", nil)
		r.Host = c.host
		r.Header.Set(contract.TokenHeader, c.token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%+v: %d", c, w.Code)
		}
		if c.status >= 400 && (!strings.Contains(w.Body.String(), `"code"`) || w.Header().Get("Content-Type") != "application/json") {
			t.Errorf("%+v: error body %q", c, w.Body.String())
		}
	}
	if strings.Join(refused, ",") != "v1:INVALID_ORIGIN,v1:INVALID_CREDENTIALS,v1:INVALID_CREDENTIALS" {
		t.Errorf("refusals recorded: %v", refused)
	}
	inert := TokenGuard(NewToken(""), rec, ok)
	w := httptest.NewRecorder()
	inert.ServeHTTP(w, httptest.NewRequest("GET", "/v1/tools", nil))
	if w.Code != 404 {
		t.Errorf("inert: %d", w.Code)
	}
}

// TestStatusOfEveryCode: PROTOCOL section 1's statuses; the codes that
// only travel on a socket fall back to 400.
func TestStatusOfEveryCode(t *testing.T) {
	for c, want := range map[contract.Code]int{
		contract.InvalidCredentials: 401, contract.CredentialExpired: 410, contract.InvalidOrigin: 403,
		contract.InvalidMessage: 400, contract.NotFound: 404, contract.Unavailable: 503,
		contract.ProtocolVersionMismatch: 400, contract.SessionMismatch: 400,
		contract.UnknownMessage: 400, contract.HostAlreadyConnected: 400,
	} {
		if got := Status(c); got != want {
			t.Errorf("%s: %d, want %d", c, got, want)
		}
	}
}

func TestOneOrigin(t *testing.T) {
	cases := []struct {
		origins []string
		want    string
		ok      bool
	}{
		{nil, "", false},
		{[]string{"http://a.example"}, "http://a.example", true},
		{[]string{"http://a.example", "http://a.example"}, "", false},
		{[]string{"http://a.example", "http://b.example"}, "", false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/local/ws", nil)
		for _, o := range c.origins {
			r.Header.Add("Origin", o)
		}
		if got, ok := OneOrigin(r); got != c.want || ok != c.ok {
			t.Errorf("%v: %q %v, want %q %v", c.origins, got, ok, c.want, c.ok)
		}
	}
}
