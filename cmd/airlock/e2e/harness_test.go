package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// The end-to-end tests run the real binary, built once per test run (with
// -race when the tests are), and speak to it over real sockets.

var (
	binPath  string // the built airlock binary
	cacheDir string // a compilation cache shared by every broker of the run
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "airlock")
	cacheDir = filepath.Join(dir, "cache")
	if err := goBuild(binPath, raceEnabled); err != nil {
		fmt.Fprintln(os.Stderr, "building airlock:", err)
		os.Exit(1)
	}
	if err := warmCache(filepath.Join(dir, "warm")); err != nil {
		fmt.Fprintln(os.Stderr, "warming the compilation cache:", err)
		os.Exit(1)
	}
	widenParallel()
	code := goleakRun(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// widenParallel lets four end-to-end tests run at once unless -parallel
// was set: each spends most of its time waiting on processes it started
// and on bounds, so two at a time (the default on two cores) leaves the
// machine idle. See RATIONALE.md, "Why do the end-to-end tests run in
// parallel on a warmed compilation cache?".
func widenParallel() {
	flag.Parse()
	f := flag.Lookup("test.parallel")
	if f != nil && f.Value.String() == strconv.Itoa(runtime.GOMAXPROCS(0)) && runtime.GOMAXPROCS(0) < 4 {
		_ = f.Value.Set("4")
	}
}

func goBuild(out string, race bool) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "..")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return build.Run()
}

// warmCache compiles every module the tests load (the bundled plugins and
// both builds of the guest and configured fixtures) into the shared cache once, with `airlock tools`,
// before any test starts: tests that run in parallel then never compile
// the same module at the same time. It uses a build without the race
// detector, which compiles modules several times faster; wazero's cache
// entries do not depend on how the binary was built (module, wazero
// version and CPU features are the key), so the race-enabled brokers load
// them as their own.
func warmCache(dir string) error {
	bin := binPath
	if raceEnabled {
		bin = filepath.Join(dir, "airlock-norace")
		if err := goBuild(bin, false); err != nil {
			return err
		}
	}
	b := wire.Bounds{TimeoutMs: 1000, MemoryMiB: 64, MaxOutputBytes: 1024, AllowedHosts: []string{}, Roots: []string{}}
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o700); err != nil {
		return err
	}
	for _, name := range []string{"guest.wasm", "guest-reactor.wasm", "configured.wasm", "configured-reactor.wasm"} {
		module, err := os.ReadFile(testkit.FixturePath(name))
		if err != nil {
			return err
		}
		m := plugins.Manifest{ID: strings.TrimSuffix(name, ".wasm"), Version: "1.0.0", Module: name, Bounds: b,
			Tools: []wire.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
		if err := plugins.WriteFolder(filepath.Join(dir, "plugins"), m, module); err != nil {
			return err
		}
	}
	notes := filepath.Join(dir, "notes")
	if err := os.MkdirAll(notes, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(bin, "tools", "--plugins", filepath.Join(dir, "plugins"), "--builtin", "--root", "notes="+notes,
		"--data", filepath.Join(dir, "data"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "AIRLOCK_EXEC_CACHE_DIR=" + cacheDir}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

// goleakRun runs the tests and then checks no goroutine was left behind.
func goleakRun(m *testing.M) int {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			return 1
		}
	}
	return code
}

// proc is a running airlock process.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	Addr    string // host:port from the listening line
	Port    int
	stdout  *testkit.Buffer
	stderr  *testkit.Buffer
	secrets []string // must never appear in stdout or stderr
	done    chan struct{}
	exit    int
}

// procOptions configure a started airlock.
type procOptions struct {
	Args    []string // after the subcommand
	Env     []string // added to a minimal environment
	Secrets []string // values that must never appear in its output
	Stdin   *os.File // its standard input; nil is /dev/null
	// Compiling makes startServe return at the listening line, while the
	// modules may still compile, instead of once they all have.
	Compiling bool
}

// baseEnv is the environment every started process gets: no inherited
// AIRLOCK_* or seed variables, a private HOME.
func baseEnv(t *testing.T) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"GORACE=halt_on_error=1",
	}
}

// startServe starts `airlock serve` on a free loopback port and waits for
// its listening line, then (unless o.Compiling) for its modules to be
// compiled: a call right after start then runs at once, as the tests'
// 2 s bounds of the bundled plugins need under the race detector, where
// even loading a module from the compilation cache takes a second. The
// process is stopped with SIGTERM at cleanup, and the test fails if it
// did not exit 0 or if a secret appears in its output.
func startServe(t *testing.T, o procOptions) *proc {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0"}, o.Args...)
	if !hasFlag(o.Args, "--data") {
		args = append(args, "--data", t.TempDir())
	}
	p := start(t, args, o)
	p.waitListening()
	if !o.Compiling {
		p.waitStderr(allCompiled)
	}
	return p
}

// allCompiled is what a broker logs once no module is left to compile.
const allCompiled = `"msg":"plugins compiled"`

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// start runs the binary with args; it does not wait for anything.
func start(t *testing.T, args []string, o procOptions) *proc {
	t.Helper()
	p := &proc{t: t, stdout: &testkit.Buffer{}, stderr: &testkit.Buffer{}, secrets: o.Secrets, done: make(chan struct{})}
	p.cmd = exec.Command(binPath, args...)
	p.cmd.Env = append(append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir), o.Env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if o.Stdin != nil {
		p.cmd.Stdin = o.Stdin
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start airlock: %v", err)
	}
	go func() {
		err := p.cmd.Wait()
		p.exit = exitCode(err)
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		p.checkSecrets()
		if t.Failed() {
			t.Logf("airlock %v stderr:\n%s", args, tail(p.stderr.String(), 8000))
		}
	})
	return p
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// waitListening reads the first stdout line, which must be the listening
// event.
func (p *proc) waitListening() {
	p.t.Helper()
	// A broker reads and hashes its plugins before it listens (it compiles
	// them afterwards): under -race on a loaded machine that takes seconds.
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		out := p.stdout.String()
		if line, _, ok := strings.Cut(out, "\n"); ok {
			var ev struct {
				Event string `json:"event"`
				Addr  string `json:"addr"`
				PID   int    `json:"pid"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event != "listening" || ev.PID != p.cmd.Process.Pid {
				p.t.Fatalf("first stdout line is not the listening event: %q", line)
			}
			p.Addr = ev.Addr
			_, port, _ := strings.Cut(ev.Addr, ":")
			fmt.Sscan(port, &p.Port)
			return
		}
		select {
		case <-p.done:
			p.t.Fatalf("airlock exited %d before listening; stderr:\n%s", p.exit, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.t.Fatalf("airlock did not print its listening line in time; stderr:\n%s", p.stderr.String())
}

// Stop sends SIGTERM and waits; the broker must drain and exit 0.
func (p *proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.exit != 0 {
			p.t.Errorf("airlock exited %d after SIGTERM", p.exit)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Errorf("airlock did not exit within 30s of SIGTERM")
	}
}

// Kill ends the process at once, as a crash would.
func (p *proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Wait waits for the process to exit by itself and returns its exit code.
func (p *proc) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.exit
	case <-time.After(timeout):
		p.t.Fatalf("airlock did not exit within %v", timeout)
		return -1
	}
}

func (p *proc) checkSecrets() {
	out := p.stdout.String() + p.stderr.String()
	for _, s := range p.secrets {
		if s != "" && strings.Contains(out, s) {
			p.t.Errorf("a secret (%d bytes) appears in airlock's output", len(s))
		}
	}
}

// AddSecret registers a value that must never appear in the output.
func (p *proc) AddSecret(s string) { p.secrets = append(p.secrets, s) }

// Stderr returns what the process logged so far.
func (p *proc) Stderr() string { return p.stderr.String() }

// waitStderr waits for the broker to log text. Its stderr is another pipe
// than the listening line and every HTTP answer, read by its own
// goroutine, so a line logged before them may still be in flight: a test
// that checks a log line must wait for it, not read it once.
func (p *proc) waitStderr(text string) {
	p.t.Helper()
	testkit.Eventually(p.t, "the broker to log "+strconv.Quote(text), func() bool { return strings.Contains(p.Stderr(), text) })
}

// URL is the broker's base URL.
func (p *proc) URL() string { return "http://" + p.Addr }

// do sends an HTTP request to the broker and returns status and body.
func (p *proc) do(method, path string, header map[string]string, body []byte) (int, []byte, http.Header) {
	p.t.Helper()
	code, data, h, err := p.tryDo(method, path, header, body)
	if err != nil {
		p.t.Fatal(err)
	}
	return code, data, h
}

// tryDo is do for goroutines other than the test's, which must not call
// t.Fatal: it returns the failure instead.
func (p *proc) tryDo(method, path string, header map[string]string, body []byte) (int, []byte, http.Header, error) {
	return p.tryDoWithin(60*time.Second, method, path, header, body)
}

// tryDoWithin is tryDo with its own deadline, for a request the broker
// may rightly hold longer (a call with a long time bound).
func (p *proc) tryDoWithin(d time.Duration, method, path string, header map[string]string, body []byte) (int, []byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.URL()+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header, err
}

// cliDeadline bounds a one-shot command of runCLI: a build compiles under
// -race on a loaded machine, so it is generous; it is there so that a
// command that should have ended (a broker that starts instead of being
// refused) fails the test instead of hanging it.
const cliDeadline = 5 * time.Minute

// runCLI runs a one-shot airlock command and returns exit code, stdout and
// stderr; it fails the test if the command is still running after
// cliDeadline.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runCLIWithin(t, cliDeadline, env, args...)
}

// runCLIWithin is runCLI with its own deadline: a command still running
// after d is killed and the test fails, naming it.
func runCLIWithin(t *testing.T, d time.Duration, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.WaitDelay = 10 * time.Second // a child that keeps the pipes open
	// The run's shared compilation cache, as for started processes: a
	// module is compiled once per run, not once per command (a few tens of
	// seconds each under -race on a loaded machine).
	cmd.Env = append(append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("airlock %s: still running after %v, killed\nstdout: %s\nstderr: %s",
			strings.Join(args, " "), d, tail(stdout.String(), 2000), tail(stderr.String(), 2000))
	}
	return exitCode(err), stdout.String(), stderr.String()
}

// scanLines returns the lines of s.
func scanLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// Suspend stops the process with SIGSTOP and returns once the kernel shows
// it stopped: the signal is delivered asynchronously, and a test that
// needs a silent peer must not race it.
func (p *proc) Suspend() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		p.t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	testkit.Eventually(p.t, "the process to stop", func() bool {
		data, err := os.ReadFile(stat)
		// The state follows the parenthesised command name: "pid (comm) T ...".
		i := bytes.LastIndexByte(data, ')')
		return err == nil && i > 0 && i+2 < len(data) && (data[i+2] == 'T' || data[i+2] == 't')
	})
}
