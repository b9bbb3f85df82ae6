package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/cmd/airlock/internal/load"
)

// socketDir is a folder only this user can enter, as $XDG_RUNTIME_DIR.
func socketDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	must(t, os.Mkdir(dir, 0o700))
	return dir
}

// TestServeUnixSocket: `serve --listen-unix PATH` listens on the socket
// beside its TCP address and says so in its listening line; the socket is
// 0600; `airlock call`, `tools` and `mcp --broker` reach the broker over
// it with `--broker unix:PATH`; `load calls` over it measures its bare
// HTTP floor over a Unix socket too; the launch token and the Host rule
// hold on it; SIGTERM removes it.
func TestServeUnixSocket(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(socketDir(t), "airlock.sock")
	notes := notesRoot(t)
	p := startServe(t, procOptions{Env: tokenEnv(), Secrets: []string{testToken},
		Args: []string{"--listen-unix", sock, "--root", "notes=" + notes}})
	if line, _, _ := strings.Cut(p.stdout.String(), "\n"); !strings.Contains(line, `"socket":"`+sock+`"`) {
		t.Errorf("the listening line does not name the socket: %s", line)
	}
	info, err := os.Lstat(sock)
	if err != nil || info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v", info, err)
	}

	broker := "unix:" + sock
	code, out, errOut := runCLI(t, tokenEnv(), "call", "read_notes", "--args", `{"path":"a.md"}`, "--broker", broker)
	if code != 0 || !strings.Contains(out, "hello from a") {
		t.Errorf("call over the socket: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, tokenEnv(), "tools", "--broker", broker); code != 0 || !strings.Contains(out, "read_notes") {
		t.Errorf("tools over the socket: exit %d\n%s\n%s", code, out, errOut)
	}
	wrong := []string{"AIRLOCK_LOCAL_TOKEN=wrong-e2e-token-0123456789abcdef0123456789"}
	if code, _, errOut := runCLI(t, wrong, "call", "read_notes", "--args", `{"path":"a.md"}`, "--broker", broker); code != exitcode.Refused {
		t.Errorf("a wrong token over the socket: exit %d, want %d\n%s", code, exitcode.Refused, errOut)
	}
	// mint needs the broker's URL: views are opened over TCP.
	if code, _, errOut := runCLI(t, tokenEnv(), "mint", "--broker", broker); code != exitcode.Usage || !strings.Contains(errOut, "needs the broker's http URL") {
		t.Errorf("mint over the socket: exit %d\n%s", code, errOut)
	}

	// The load tool's callers dial the socket themselves, and the bare
	// HTTP floor's over a socket of its own.
	if code, out, errOut := runCLI(t, tokenEnv(), "load", "calls", "--broker", broker, "--reuse-instance", "--root", "notes="+notes,
		"-c", "2", "-d", "1s", "--warmup", "0s", "--args", `{"path":"a.md"}`, "--json"); code != 0 {
		t.Errorf("load calls over the socket: exit %d\n%s\n%s", code, out, tail(errOut, 2000))
	} else {
		var r load.CallsReport
		decodeReport(t, out, &r)
		if r.Broker != broker || r.HTTPFloor == nil || !strings.Contains(r.HTTPFloor.Label, "bare net/http server in its own process") ||
			!strings.Contains(r.HTTPFloor.Label, "over a Unix socket") {
			t.Fatalf("load calls over the socket: broker %q, floor %+v", r.Broker, r.HTTPFloor)
		}
		for name, f := range r.Sides() {
			if f.Calls <= 0 || !f.AllOK() || f.TransportErrors != 0 {
				t.Errorf("load calls over the socket: %s: %+v", name, f)
			}
		}
		checkRatios(t, r.HTTPFloorRatios)
	}

	m := startMCP(t, tokenEnv(), "--broker", broker)
	if res := m.Call(t, "read_notes", map[string]any{"path": "a.md"}); res.IsError || !strings.Contains(mcptest.Text(res), "hello from a") {
		t.Errorf("mcp --broker over the socket: %s", mcptest.Text(res))
	}

	// Host rule: over the socket only Host: localhost.
	hc := &http.Client{Transport: v1client.UnixTransport(sock)}
	for host, want := range map[string]int{"localhost": http.StatusOK, "evil.example": http.StatusForbidden, "127.0.0.1:" + strconv.Itoa(p.Port): http.StatusForbidden} {
		req, _ := http.NewRequest("GET", "http://localhost/v1/tools", nil)
		req.Host = host
		req.Header.Set(contract.TokenHeader, testToken)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s over the socket: %d, want %d", host, resp.StatusCode, want)
		}
	}
	hc.CloseIdleConnections()

	p.Stop()
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlived the broker: %v", err)
	}
}

// TestServeUnixSocketFolderRule: a socket in a folder others can enter is
// refused at start, exit 2, one line naming the flag, the path and the
// fix; so is a relative path.
func TestServeUnixSocketFolderRule(t *testing.T) {
	t.Parallel()
	open := filepath.Join(t.TempDir(), "open")
	must(t, os.Mkdir(open, 0o755))
	code, _, errOut := runCLI(t, tokenEnv(), "serve", "--listen", "127.0.0.1:0", "--listen-unix", filepath.Join(open, "a.sock"), "--data", t.TempDir())
	if code != exitcode.Usage || !strings.Contains(errOut, "--listen-unix "+open+"/a.sock: others can enter "+open+" (mode 0755)") ||
		!strings.Contains(errOut, "$XDG_RUNTIME_DIR") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, want %d and one line naming the folder and the fix:\n%s", code, exitcode.Usage, errOut)
	}
	if code, _, errOut := runCLI(t, tokenEnv(), "serve", "--listen", "unix:"+filepath.Join(open, "a.sock"), "--data", t.TempDir()); code != exitcode.Usage || !strings.Contains(errOut, "--listen-unix PATH") {
		t.Errorf("--listen unix:PATH: exit %d\n%s", code, errOut)
	}
}

// TestUnixSocketRefusesAnotherUser is the attack: a process of another
// user (nobody), holding the launch token, reaches the socket (its folder
// and file opened to everyone after the broker started: an operator's
// mistake) and calls a tool. The broker closes its connection before
// reading a byte, logs and counts it, and goes on serving its own user.
// Needs root, to run the attacker as nobody.
func TestUnixSocketRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a process as another user needs root")
	}
	t.Parallel()
	// A 0700 folder whose parents nobody can pass through (/tmp), so that
	// opening it later opens the way.
	dir, err := os.MkdirTemp("", "airlock-run-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o700))
	sock := filepath.Join(dir, "airlock.sock")
	p := startServe(t, procOptions{Env: tokenEnv(), Secrets: []string{testToken},
		Args: []string{"--listen-unix", sock, "--root", "notes=" + notesRoot(t), "--log-level", "debug"}})
	// The attacker runs a copy of airlock it can read, from a folder it
	// can enter.
	var public string
	public, err = os.MkdirTemp("", "airlock-attacker-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(public) })
	must(t, os.Chmod(public, 0o755))
	bin := filepath.Join(public, "airlock")
	self, err := os.ReadFile(binPath)
	must(t, err)
	must(t, os.WriteFile(bin, self, 0o755))
	attack := func() (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "call", "read_notes", "--args", `{"path":"a.md"}`, "--broker", "unix:"+sock)
		cmd.Env = append([]string{"HOME=" + public}, tokenEnv()...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return exitCode(err), string(out)
	}
	// With the folder closed, nobody cannot reach the socket at all.
	if code, out := attack(); code == 0 || strings.Contains(out, "hello from a") {
		t.Fatalf("nobody called a tool through a closed folder: exit %d\n%s", code, out)
	}
	// Opened to everyone, the socket lets nobody connect, and the broker
	// closes the connection unread.
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chmod(sock, 0o666))
	requests := strings.Count(p.Stderr(), `"msg":"request"`)
	if code, out := attack(); code == 0 || strings.Contains(out, "hello from a") {
		t.Fatalf("nobody called a tool over the socket: exit %d\n%s", code, out)
	}
	p.waitStderr(`"msg":"unix socket: a process of another user was refused","uid":65534`)
	if n := strings.Count(p.Stderr(), `"msg":"request"`); n != requests {
		t.Errorf("the broker served %d requests of another user:\n%s", n-requests, tail(p.Stderr(), 4000))
	}
	if got := p.metric(t, "airlock_unix_peers_refused_total"); got < 1 {
		t.Errorf("airlock_unix_peers_refused_total = %v, want at least 1", got)
	}
	// Its own user is still served.
	if code, out, errOut := runCLI(t, tokenEnv(), "call", "read_notes", "--args", `{"path":"a.md"}`, "--broker", "unix:"+sock); code != 0 || !strings.Contains(out, "hello from a") {
		t.Errorf("this user after the refusal: exit %d\n%s\n%s", code, out, errOut)
	}
}
