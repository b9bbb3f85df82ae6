package session

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/config/datadir"
)

// TestLoadStorageKeyCreatesItOnce: the first load creates a 32-byte,
// 0600 key file; later loads read the same key.
func TestLoadStorageKeyCreatesItOnce(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadStorageKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, StorageKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 || len(k1) != 32 {
		t.Fatalf("key file %v (%v), key of %d bytes; want mode 0600, 32 bytes", fi, err, len(k1))
	}
	k2, err := LoadStorageKey(dir)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: %v, same key %v", err, bytes.Equal(k1, k2))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the data directory holds %d entries, want the key file alone", len(entries))
	}
}

// TestLoadStorageKeyRefusesAnUnsafeFile: a key file others can read, one
// of the wrong size, or a link is refused, never used or replaced.
func TestLoadStorageKeyRefusesAnUnsafeFile(t *testing.T) {
	for name, c := range map[string]struct {
		make func(path string) error
		want error
	}{
		"readable by others": {func(p string) error { return os.WriteFile(p, make([]byte, 32), 0o644) }, ErrStorageKeyShared},
		"too short":          {func(p string) error { return os.WriteFile(p, make([]byte, 16), 0o600) }, ErrStorageKeySize},
		"a link":             {func(p string) error { return os.Symlink(filepath.Join(filepath.Dir(p), "elsewhere"), p) }, datadir.ErrLink},
	} {
		dir := t.TempDir()
		if err := c.make(filepath.Join(dir, StorageKeyFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadStorageKey(dir); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// TestStorageKeyOnlyForAView: POST /local/storage-key answers the key to
// the view cookie with its view key from the launch origin, and nothing
// to anything less: no cookie, a wrong or missing view key (even with
// local.view_key off), the host's cookie, another Origin, an expired
// session.
func TestStorageKeyOnlyForAView(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	for _, required := range []bool{true, false} {
		local := testLocal()
		local.ViewKey = required
		clock := newFakeClock()
		b := startBrokerWith(t, Options{Local: local, Clock: clock, StorageKey: key})
		m, pass := flow(t, b)
		host := &http.Cookie{Name: contract.HostCookie, Value: m.HostCookieKey}
		post := func(origin string, ck *http.Cookie, body string) (int, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, b.URL+"/local/storage-key", strings.NewReader(body))
			req.Header.Set("Origin", origin)
			if ck != nil {
				req.AddCookie(ck)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out struct {
				StorageKey string `json:"storageKey"`
				Error      struct{ Code string }
			}
			_ = json.NewDecoder(res.Body).Decode(&out)
			if res.StatusCode == http.StatusOK && res.Header.Get("Cache-Control") != "no-store" {
				t.Error("the storage key answered without Cache-Control: no-store")
			}
			return res.StatusCode, out.StorageKey + out.Error.Code
		}
		right := `{"viewKey":"` + pass.Key + `"}`
		if code, got := post(b.Origin, pass.Cookie, right); code != 200 || got != base64.RawURLEncoding.EncodeToString(key) {
			t.Fatalf("required %v: the view's own ask: %d %q", required, code, got)
		}
		for _, c := range []struct {
			name, origin string
			ck           *http.Cookie
			body         string
			want         int
		}{
			{"no cookie", b.Origin, nil, right, 401},
			{"no view key", b.Origin, pass.Cookie, `{}`, 401},
			{"a wrong view key", b.Origin, pass.Cookie, `{"viewKey":"` + pass.Cookie.Value + `"}`, 401},
			{"the host's cookie", b.Origin, host, right, 401},
			{"another origin", "http://127.0.0.1:1", pass.Cookie, right, 403},
			{"an unknown field", b.Origin, pass.Cookie, `{"viewKey":"` + pass.Key + `","x":1}`, 400},
		} {
			if code, got := post(c.origin, c.ck, c.body); code != c.want || strings.Contains(got, "Bw") {
				t.Errorf("required %v, %s: %d %q, want %d", required, c.name, code, got, c.want)
			}
		}
		clock.Advance(8*time.Hour + time.Second) // expired, its tombstone kept
		if code, got := post(b.Origin, pass.Cookie, right); code != 410 {
			t.Errorf("required %v, expired: %d %q, want 410", required, code, got)
		}
	}
}
