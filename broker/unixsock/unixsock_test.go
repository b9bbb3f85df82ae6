package unixsock

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privateDir is a 0700 folder of the user's, as $XDG_RUNTIME_DIR is.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestListenRefusesUnsafePaths(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(privateDir(t), "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		path string
		want error
		says string
	}{
		"relative":             {"airlock.sock", ErrPath, "absolute"},
		"too long":             {"/" + strings.Repeat("a", MaxPath) + "/s", ErrPath, "over the 107"},
		"folder others enter":  {filepath.Join(open, "airlock.sock"), ErrFolder, "mode 0755"},
		"no folder":            {filepath.Join(t.TempDir(), "none", "airlock.sock"), ErrFolder, "no folder"},
		"a file where it goes": {file, ErrInUse, "is not a socket"},
	} {
		ln, err := Listen(c.path, nil)
		if err == nil {
			ln.Close()
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", name, err, c.want, c.says)
		}
	}
	if data, _ := os.ReadFile(file); data == nil {
		if _, err := os.Stat(file); err != nil {
			t.Errorf("the file in the way was touched: %v", err)
		}
	}
}

func TestListenSocketIsPrivateAndRemovedOnClose(t *testing.T) {
	path := filepath.Join(privateDir(t), "airlock.sock")
	ln, err := Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Lstat(path)
	if err != nil || info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v", info.Mode(), err)
	}
	// A second broker on the same path is refused while the first lives.
	if second, err := Listen(path, nil); !errors.Is(err, ErrInUse) {
		if second != nil {
			second.Close()
		}
		t.Errorf("a second listener: %v, want ErrInUse", err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket file outlived its listener: %v", err)
	}
}

// TestListenReplacesStaleSocket: a socket nothing listens on (a broker
// killed without closing) is replaced.
func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(privateDir(t), "airlock.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	ln, err := Listen(path, nil)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	ln.Close()
}

// TestSameUserIsServed: a connection from this user is accepted and reads
// what it was sent.
func TestSameUserIsServed(t *testing.T) {
	path := filepath.Join(privateDir(t), "airlock.sock")
	ln, err := Listen(path, func(uid int) { t.Errorf("refused uid %d", uid) })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		done <- string(b)
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	c.Close()
	select {
	case got := <-done:
		if got != "hello" {
			t.Errorf("read %q", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("no connection accepted")
	}
}

// TestOtherUserIsClosedUnread is the attack: a process of another user
// reaches the socket (here the folder rule is left out, as if the folder
// had been opened to others) and writes a request. Its connection is
// closed before a byte is read, the refusal names its uid, and the
// listener goes on to serve this user. Needs root, to run the attacker as
// nobody.
func TestOtherUserIsClosedUnread(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a process as another user needs root")
	}
	// A folder nobody can enter and read: t.TempDir's parent is closed.
	dir, err := os.MkdirTemp("", "unixsock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "airlock.sock")
	refused := make(chan int, 4)
	ln, err := listen(path, func(uid int) { refused <- uid })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	// The attacker is this test binary, run as nobody from a copy it can
	// read; it connects and writes.
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "attacker")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	cmd := exec.Command(bin, "-test.run=^TestAttackerConnects$")
	cmd.Env = []string{"UNIXSOCK_ATTACK=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the attacker: %v\n%s", err, out)
	}
	select {
	case uid := <-refused:
		if uid != nobody {
			t.Errorf("refused uid %d, want %d", uid, nobody)
		}
	case c := <-accepted:
		c.Close()
		t.Fatal("another user's connection was accepted")
	case <-time.After(time.Minute):
		t.Fatal("the attacker's connection was neither refused nor accepted")
	}
	// This user is still served.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case got, ok := <-accepted:
		if !ok {
			t.Fatal("the listener stopped after a refusal")
		}
		got.Close()
	case <-time.After(time.Minute):
		t.Fatal("this user's connection was not accepted after a refusal")
	}
}

// TestAttackerConnects is the attacker of TestOtherUserIsClosedUnread, run
// in a process of its own; alone it does nothing.
func TestAttackerConnects(t *testing.T) {
	path := os.Getenv("UNIXSOCK_ATTACK")
	if path == "" {
		t.Skip("the attacker process of TestOtherUserIsClosedUnread")
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("uid %s could not connect: %v", strconv.Itoa(os.Getuid()), err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("POST /v1/calls HTTP/1.1\r\nHost: localhost\r\n\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the broker answered another user: %d %v", n, err)
	}
}
