package e2e

import (
	"bufio"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/executors/testkit"
)

// A README's runnable examples are fenced blocks that a marker comment
// precedes, `<!-- KIND -->` or `<!-- KIND: NAME -->`; the tests that follow
// a README run its marked blocks as written, so an example that stops
// working fails the suite.

// markedBlock is one marked fenced block of a README.
type markedBlock struct {
	name string // the marker's NAME, "" when it has none
	body string // the block's lines, trimmed
	line int    // the marker's line number
}

// markedBlocks returns the blocks of readme (named file in failures) that
// a KIND marker precedes, in order.
func markedBlocks(t *testing.T, file, readme, kind string) []markedBlock {
	t.Helper()
	var blocks []markedBlock
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		marker := strings.TrimSpace(lines[i])
		inner, ok := strings.CutPrefix(marker, "<!-- "+kind)
		if !ok || !strings.HasSuffix(inner, "-->") {
			continue
		}
		inner = strings.TrimSpace(strings.TrimSuffix(inner, "-->"))
		name, named := strings.CutPrefix(inner, ":")
		if inner != "" && !named {
			continue // another kind that starts with this one
		}
		if i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```") {
			t.Fatalf("%s line %d: %s is not followed by a fenced block", file, i+1, marker)
		}
		b := markedBlock{name: strings.TrimSpace(name), line: i + 1}
		var body []string
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		b.body = strings.TrimSpace(strings.Join(body, "\n"))
		blocks = append(blocks, b)
	}
	return blocks
}

// lineProc is one README command left running (a broker, an environment):
// `bash -c "exec LINE"` in a folder and an environment the test chose.
type lineProc struct {
	line           string
	cmd            *exec.Cmd
	stdout, stderr *testkit.Buffer
	done           chan int
	stopOnce       sync.Once
	code           int
}

// startLine starts line (without a trailing &); it is stopped with
// SIGTERM at cleanup, when it must exit 0, unless the test stopped it.
func startLine(t *testing.T, dir string, env []string, line string) *lineProc {
	t.Helper()
	line = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "&"))
	p := &lineProc{line: line, stdout: &testkit.Buffer{}, stderr: &testkit.Buffer{}, done: make(chan int, 1)}
	p.cmd = exec.Command("bash", "-c", "exec "+line)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- exitCode(p.cmd.Wait()) }()
	t.Cleanup(func() {
		if code := p.stop(); code != 0 {
			t.Errorf("%s exited %d:\n%s", line, code, tail(p.stderr.String(), 4000))
		}
	})
	return p
}

// stop sends SIGTERM and returns the exit code, once.
func (p *lineProc) stop() int {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case p.code = <-p.done:
		case <-time.After(2 * time.Minute):
			_ = p.cmd.Process.Kill()
			p.code = <-p.done
		}
	})
	return p.code
}

// waitOutput waits until the process's stdout holds want; it fails the
// test at once if the process exits first.
func (p *lineProc) waitOutput(t *testing.T, want string) {
	t.Helper()
	p.waitFor(t, "stdout holding "+want, func() bool { return strings.Contains(p.stdout.String(), want) })
}

func (p *lineProc) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, what+" from "+p.line, func() bool {
		select {
		case code := <-p.done:
			p.done <- code
			t.Fatalf("%s exited %d:\n%s", p.line, code, tail(p.stderr.String(), 4000))
		default:
		}
		return ok()
	})
}

// onFreePort is a README's broker line on a port the system chooses: the
// README's 127.0.0.1:7420 may be taken on a test machine.
func onFreePort(line string) string {
	return strings.ReplaceAll(line, "127.0.0.1:7420", "127.0.0.1:0")
}

var listeningAddr = regexp.MustCompile(`"addr":"([^"]+)"`)

// waitListening waits for a broker's listening line and for its modules
// to be compiled (see startServe), and returns the address it names.
func (p *lineProc) waitListening(t *testing.T) string {
	t.Helper()
	addr := ""
	p.waitFor(t, "the broker's listening line", func() bool {
		sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
		if sc.Scan() {
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				addr = m[1]
			}
		}
		return addr != ""
	})
	p.waitFor(t, "the broker's modules compiled", func() bool { return strings.Contains(p.stderr.String(), allCompiled) })
	return addr
}
