package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/airlock/airlock/broker/channel/rtt"
	"github.com/airlock/airlock/broker/v1client"
)

// The floors the load measures the broker against run as processes of
// their own, started from the running binary by hidden commands, so both
// sides pay the same wake-ups between processes (RATIONALE.md, "What
// does the relay baseline leave out, and what does it share?", and "Why
// does the paired shape's rtt echo run in a process of its own?"). Each
// reads its run's secret from the first line of its stdin (RATIONALE.md,
// "Why does a floor process take a secret, on its stdin?"), prints its
// address (its URL, or unix:PATH for a Unix socket) on its first line of
// stdout, answers each later line of stdin with one line, and serves
// until its stdin closes. SpawnSelf is the load's side of that exchange,
// ServeFloor the floor's.

// SpawnSelf starts the running binary with args and a fresh secret and
// reads the address it prints (floorAddress). ask writes one line to its
// stdin and reads one line back; closing its stdin (Stop) ends it. An
// error says that the floor named what did not start, and why (the
// child's own reason is on stderr, which it shares).
func SpawnSelf(ctx context.Context, what string, args ...string) (fp *FloorProcess, ask func(string) (string, error), err error) {
	defer func() {
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("the %s did not start: %w", what, err)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	c := exec.Command(self, args...)
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, nil, err
	}
	secret := NewSecret()
	if _, err := io.WriteString(stdin, secret+"\n"); err != nil {
		_ = stdin.Close()
		return nil, nil, errors.Join(err, c.Wait())
	}
	var mu sync.Mutex // one question at a time on the pipes
	stopped := false
	stop := func() error {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return nil
		}
		stopped = true
		_ = stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		return c.Wait()
	}
	lines := bufio.NewReader(stdout)
	ask = func(q string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := io.WriteString(stdin, q+"\n"); err != nil {
			return "", fmt.Errorf("the %s: %w", what, err)
		}
		l, err := lines.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("the %s: %w", what, err)
		}
		return strings.TrimSpace(l), nil
	}
	addr := make(chan string, 1)
	go func() {
		l, _ := lines.ReadString('\n')
		addr <- strings.TrimSpace(l)
	}()
	select {
	case a := <-addr:
		url, socket, err := floorAddress(a)
		if err != nil {
			if serr := stop(); serr != nil {
				return nil, nil, serr // its exit status
			}
			return nil, nil, err
		}
		return &FloorProcess{URL: url, Socket: socket, PID: c.Process.Pid, Secret: secret, Stop: stop}, ask, nil
	case <-ctx.Done():
		_ = stop()
		return nil, nil, ctx.Err()
	}
}

// floorAddress reads the address a floor printed: its http:// URL, or
// unix:PATH for a Unix socket, which is dialled with the URL
// v1client.UnixBase (Host: localhost) as the broker's socket is.
func floorAddress(line string) (url, socket string, err error) {
	if path, ok := strings.CutPrefix(line, v1client.UnixPrefix); ok && filepath.IsAbs(path) {
		return v1client.UnixBase, path, nil
	}
	if strings.HasPrefix(line, "http://") {
		return line, "", nil
	}
	return "", "", fmt.Errorf("it printed %q, not its address", line)
}

// errNoSecret is a floor command started by hand, not by the load.
var errNoSecret = errors.New("no secret on stdin: this command is started by airlock load")

// ServeFloor is a floor's side of SpawnSelf: start is given the run's
// secret (in's first line) and returns the address to print on out (see
// floorAddress) and how to stop; each later line of in is answered with answer (when set) until in
// closes, and then the floor is stopped.
func ServeFloor(in io.Reader, out io.Writer, start func(secret string) (addr string, stop func() error, err error), answer func(string) string) (err error) {
	lines := bufio.NewScanner(in)
	if !lines.Scan() {
		return errNoSecret
	}
	addr, stop, err := start(lines.Text())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	fmt.Fprintln(out, addr)
	for lines.Scan() {
		if answer != nil {
			fmt.Fprintln(out, answer(lines.Text()))
		}
	}
	return nil
}

// viewsQuestion asks the forwarder how many views it has registered.
const viewsQuestion = "views"

// ForwarderViews is the Views of a forwarder's FloorProcess: it asks the
// process (ask, from SpawnSelf) how many views it has registered.
func ForwarderViews(ask func(string) (string, error)) func() (int, error) {
	return func() (int, error) {
		l, err := ask(viewsQuestion)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(l)
		if err != nil {
			return 0, fmt.Errorf("the forwarder answered %q", l)
		}
		return n, nil
	}
}

// ServeForwarder serves the bare forwarder (StartForwarder) as a floor
// process (ServeFloor), answering each views question.
func ServeForwarder(in io.Reader, out io.Writer, maxMessage int64) error {
	var views func() int
	return ServeFloor(in, out, func(secret string) (string, func() error, error) {
		fw, err := StartForwarder(maxMessage, secret)
		if err != nil {
			return "", nil, err
		}
		views = fw.Views
		return fw.URL(), fw.Close, nil
	}, func(q string) string {
		if q == viewsQuestion {
			return strconv.Itoa(views())
		}
		return "?"
	})
}

// ServeHTTPFloor serves a baseline's tool behind a bare net/http server
// (StartHTTPFloor, on a Unix socket with unix) as a floor process
// (ServeFloor). Each later line of in is a call envelope, answered on out
// by the same floor without its HTTP hop (baseline.HTTPFloor.Answer): the
// floor of a call over a pipe, as `airlock mcp` takes them on stdio. A
// line that fails is answered with {"error":WHY}.
func ServeHTTPFloor(in io.Reader, out io.Writer, label, tool string, roots map[string]string, cacheDir string, unix bool) error {
	ctx := context.Background()
	var srv *HTTPFloorServer
	return ServeFloor(in, out, func(secret string) (string, func() error, error) {
		var err error
		if srv, err = StartHTTPFloor(ctx, label, tool, roots, cacheDir, secret, unix); err != nil {
			return "", nil, err
		}
		addr := srv.URL
		if srv.Socket != "" {
			addr = v1client.UnixPrefix + srv.Socket
		}
		return addr, func() error { return srv.Close(ctx) }, nil
	}, func(line string) string {
		a, err := srv.floor.Answer(ctx, []byte(line))
		if err != nil {
			why, _ := json.Marshal(map[string]string{"error": err.Error()})
			return string(why)
		}
		return string(a)
	})
}

// ServeRTTEcho serves the far end of the paired shape's rtt floor
// (broker/channel/rtt.Echo), answering answerSize bytes, as a floor
// process (ServeFloor).
func ServeRTTEcho(in io.Reader, out io.Writer, answerSize int) error {
	return ServeFloor(in, out, func(secret string) (string, func() error, error) {
		e, err := rtt.NewEcho(answerSize, func(h http.Handler) http.Handler { return SecretGuard(secret, h) })
		if err != nil {
			return "", nil, err
		}
		return e.URL(), func() error { e.Close(); return nil }, nil
	}, nil)
}
