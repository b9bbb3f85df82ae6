package load

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// TestHTTPFloorRefusesRequestsWithoutTheRunSecret: the HTTP floor runs the
// operator's tool for whoever reaches its loopback port, so a request
// without the run's secret, or with another, is answered 401 and the tool
// never runs for it; the run's own request is answered by the tool.
func TestHTTPFloorRefusesRequestsWithoutTheRunSecret(t *testing.T) {
	module := testkit.Fixture(t, "guest-reactor.wasm")
	m := plugins.Manifest{ID: "guest", Version: "1.0.0", Module: "guest.wasm", SHA256: plugins.HashModule(module),
		Tools:  []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Bounds: wire.Bounds{TimeoutMs: 5000, MemoryMiB: 64, MaxOutputBytes: 1024, AllowedHosts: []string{}}}
	parent := t.TempDir()
	if err := plugins.WriteFolder(parent, m, module); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secret := NewSecret()
	s, err := StartHTTPFloor(ctx, filepath.Join(parent, "guest"), "echo", nil, "", secret)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/calls", strings.NewReader(
			`{"v":1,"callId":"c1","tool":"echo","descriptorId":"guest","args":{"marker":"ran-the-tool"},"boundsEcho":{}}`))
		if token != "" {
			req.Header.Set(contract.TokenHeader, token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for name, token := range map[string]string{"none": "", "another": "wrong", "a prefix": secret[:63], "longer": secret + "0"} {
		if code, body := post(token); code != http.StatusUnauthorized || strings.Contains(body, "ran-the-tool") {
			t.Errorf("%s secret: %d %q, want 401 without the tool's answer", name, code, body)
		}
	}
	if code, body := post(secret); code != http.StatusOK || !strings.Contains(body, "ran-the-tool") {
		t.Errorf("the run's own request: %d %q", code, body)
	}
}
