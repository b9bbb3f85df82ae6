package testkit

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB records a failure instead of ending the test, so the kit's own
// failures can be checked.
type fakeTB struct {
	testing.TB
	failure string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) { f.failure = fmt.Sprintf(format, args...) }

func TestEventuallyFailsNamingWhat(t *testing.T) {
	defer func(p time.Duration) { patience = p }(patience)
	patience = 30 * time.Millisecond
	var f fakeTB
	polls := 0
	Eventually(&f, "the reaper to run", func() bool { polls++; return false })
	if !strings.Contains(f.failure, "the reaper to run") {
		t.Fatalf("failure %q does not name what was awaited", f.failure)
	}
	if polls < 2 {
		t.Fatalf("cond polled %d times", polls)
	}
}

func TestEventuallyReturnsOnceCondHolds(t *testing.T) {
	var f fakeTB
	polls := 0
	Eventually(&f, "three polls", func() bool { polls++; return polls == 3 })
	if f.failure != "" || polls != 3 {
		t.Fatalf("failure %q after %d polls", f.failure, polls)
	}
}

func TestReceiveFailsNamingWhat(t *testing.T) {
	defer func(p time.Duration) { patience = p }(patience)
	patience = 30 * time.Millisecond
	var f fakeTB
	if v := Receive(&f, "the answer", make(chan int)); v != 0 || !strings.Contains(f.failure, "the answer") {
		t.Fatalf("Receive = %d, failure %q", v, f.failure)
	}
}

func TestReceiveReturnsTheValue(t *testing.T) {
	var f fakeTB
	ch := make(chan string, 1)
	ch <- "v"
	if v := Receive(&f, "v", ch); v != "v" || f.failure != "" {
		t.Fatalf("Receive = %q, failure %q", v, f.failure)
	}
}

// TestBufferRace writes from several goroutines while others read; run
// with -race.
func TestBufferRace(t *testing.T) {
	const writers, writes = 4, 500
	var b Buffer
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = b.String()
				}
			}
		})
	}
	var ww sync.WaitGroup
	for range writers {
		ww.Go(func() {
			for range writes {
				_, _ = b.Write([]byte("x"))
			}
		})
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	if n := len(b.String()); n != writers*writes {
		t.Fatalf("%d bytes, want %d", n, writers*writes)
	}
}

func TestFixtureIsACopy(t *testing.T) {
	a := Fixture(t, "silent.wasm")
	if !bytes.HasPrefix(a, []byte("\x00asm")) {
		t.Fatalf("not a wasm module: %q", a)
	}
	a[0] = 'X'
	if b := Fixture(t, "silent.wasm"); b[0] != 0 {
		t.Fatal("a caller's change reached the next caller")
	}
	var f fakeTB
	if Fixture(&f, "no-such.wasm") != nil || !strings.Contains(f.failure, "no-such.wasm") {
		t.Fatalf("missing fixture: failure %q", f.failure)
	}
}

// TestBinaryLinksNoTestPackage: test kits are exported so that tests in
// every folder can import them; this keeps them out of the product.
func TestBinaryLinksNoTestPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "list", "-deps", "./cmd/airlock")
	cmd.Dir = filepath.Join(FixturePath(""), "..", "..") // the repository
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(pkg, "github.com/airlock/airlock/") && (strings.HasSuffix(pkg, "test") || strings.HasSuffix(pkg, "/testkit")) {
			t.Errorf("the binary links %s", pkg)
		}
	}
}
