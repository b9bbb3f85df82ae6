package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// guestPlugin is a plugin folder whose reactor's echo tool answers its
// args.
func guestPlugin(t *testing.T) string {
	t.Helper()
	module := testkit.Fixture(t, "guest-reactor.wasm")
	m := plugins.Manifest{ID: "guest", Version: "1.0.0", Module: "guest.wasm", SHA256: plugins.HashModule(module),
		Tools:  []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Bounds: wire.Bounds{TimeoutMs: 5000, MemoryMiB: 64, MaxOutputBytes: 1024, AllowedHosts: []string{}}}
	parent := t.TempDir()
	if err := plugins.WriteFolder(parent, m, module); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "guest")
}

// TestHTTPFloorRefusesRequestsWithoutTheRunSecret: the HTTP floor runs the
// operator's tool for whoever reaches its loopback port or its socket, so
// a request without the run's secret, or with another, is answered 401
// and the tool never runs for it; the run's own request is answered by
// the tool.
func TestHTTPFloorRefusesRequestsWithoutTheRunSecret(t *testing.T) {
	dir := guestPlugin(t)
	for name, unix := range map[string]bool{"tcp": false, "unix": true} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			secret := NewSecret()
			s, err := StartHTTPFloor(ctx, dir, "echo", nil, "", secret, unix)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Close(ctx); err != nil {
					t.Error(err)
				}
			}()
			if unix != (s.Socket != "") {
				t.Fatalf("unix %v: socket %q", unix, s.Socket)
			}
			client := &http.Client{Transport: &http.Transport{}}
			if unix {
				client.Transport = v1client.UnixTransport(s.Socket)
			}
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
		})
	}
}

// TestHTTPFloorOverUnixSocket: with unix the floor process prints
// unix:PATH, a 0600 socket in a fresh folder only this user can enter; the
// load's callers dial it as they dial the broker's socket, and the
// folder is gone once the floor's stdin closes.
func TestHTTPFloorOverUnixSocket(t *testing.T) {
	dir := guestPlugin(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- ServeHTTPFloor(inR, outW, dir, "echo", nil, "", true); outW.Close() }()
	secret := NewSecret()
	if _, err := io.WriteString(inW, secret+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, socket, err := floorAddress(strings.TrimSpace(line))
	if err != nil || url != v1client.UnixBase || !strings.HasPrefix(line, "unix:/") {
		t.Fatalf("printed %q: %q %q %v", line, url, socket, err)
	}
	info, err := os.Stat(filepath.Dir(socket))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the socket's folder: %v %v", info, err)
	}
	if info, err := os.Lstat(socket); err != nil || info.Mode().Type() != fs.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v %v", info, err)
	}
	call := wire.Call{V: wire.Version, CallID: "c", Tool: "echo", DescriptorID: "guest",
		Args: json.RawMessage(`{"marker":"x"}`), BoundsEcho: json.RawMessage(`{}`)}
	op, closeConns, err := directOp(&v1client.Client{Base: url, Socket: socket, Token: secret}, call, 1, "bare HTTP floor")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if out, err := op(context.Background(), 0); out != "ok" || err != nil {
			t.Fatalf("a call over the socket: %q %v", out, err)
		}
	}
	closeConns()
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(socket)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the socket's folder outlived the floor: %v", err)
	}
}

// TestFloorAddress: a floor's first line is its http:// URL or unix:PATH
// with an absolute path; anything else is refused, naming what it was.
func TestFloorAddress(t *testing.T) {
	for line, want := range map[string][2]string{
		"http://127.0.0.1:1":     {"http://127.0.0.1:1", ""},
		"unix:/run/x/floor.sock": {v1client.UnixBase, "/run/x/floor.sock"},
	} {
		url, socket, err := floorAddress(line)
		if err != nil || url != want[0] || socket != want[1] {
			t.Errorf("%q: %q %q %v", line, url, socket, err)
		}
	}
	for _, line := range []string{"", "listening", "unix:floor.sock", "https://127.0.0.1:1"} {
		if _, _, err := floorAddress(line); err == nil || !strings.Contains(err.Error(), `"`+line+`"`) {
			t.Errorf("%q: %v", line, err)
		}
	}
}
