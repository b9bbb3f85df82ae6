// Package browsertest drives Debian's headless Chromium for the end-to-end
// tests of the pages the broker serves, through chromedp (see
// RATIONALE.md, "Why chromedp for the browser tests?").
//
// The browser is found on PATH (chromium, then chromium-browser, then
// google-chrome). Without one a test skips, unless AIRLOCK_REQUIRE_CHROMIUM
// is 1 (CI), where it fails instead. Screenshots go to the folder named by
// AIRLOCK_SCREENSHOTS, or to a folder under the system temporary
// directory that the test logs.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock/airlock/executors/testkit"
)

// names are the executables tried on PATH, in order.
var names = []string{"chromium", "chromium-browser", "google-chrome"}

// Find is the browser's path on PATH.
func Find() (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %s on PATH (apt-get install chromium)", strings.Join(names, ", "))
}

// Browser is one headless browser; each Tab is a page in it.
type Browser struct {
	t      testing.TB
	ctx    context.Context // the first tab's, which owns the browser
	cancel context.CancelFunc
	shots  string
}

// Start launches the browser with extra options added to the defaults
// (a test that serves a page under a site's name maps that name to
// loopback with "host-resolver-rules"), or skips the test (see the
// package doc). It stops when the test ends.
func Start(t testing.TB, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	path, err := Find()
	if err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("a browser is required (AIRLOCK_REQUIRE_CHROMIUM=1): %v", err)
		}
		t.Skip(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 900),
		chromedp.WSURLReadTimeout(2*time.Minute)) // a loaded machine starts it slowly
	opts = append(opts, extra...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{t: t, ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", path, err)
	}
	return b
}

// Tab is one page of the browser.
type Tab struct {
	b   *Browser
	ctx context.Context
}

// First is the tab the browser opened with.
func (b *Browser) First() *Tab { return &Tab{b: b, ctx: b.ctx} }

// NewTab opens another tab; it closes when the test ends.
func (b *Browser) NewTab() *Tab {
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("new tab: %v", err)
	}
	return &Tab{b: b, ctx: ctx}
}

// Do runs steps in the tab, bounded so a hung page fails the test
// instead of holding it.
func (tb *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	tb.b.t.Helper()
	run(tb, chromedp.Steps(steps...))
}

// run runs one action in the tab, bounded like Do, and returns its value.
func run[T any](tb *Tab, a chromedp.Action[T]) T {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.b.t.Fatalf("browser: %v", err)
	}
	return v
}

// Navigate opens url in the tab.
func (tb *Tab) Navigate(url string) { tb.b.t.Helper(); tb.Do(chromedp.Navigate(url)) }

// Eval evaluates a JavaScript expression in the page and returns its
// value as a string (fmt's %v of the JSON value).
func (tb *Tab) Eval(expr string) string {
	tb.b.t.Helper()
	v := run(tb, chromedp.Evaluate[any](expr))
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprint(v)
}

// WaitFor polls a page expression until it evaluates to want, logging
// each value it sees on the way (shown if the test fails).
func (tb *Tab) WaitFor(what, expr, want string) {
	tb.b.t.Helper()
	got := ""
	testkit.Eventually(tb.b.t, fmt.Sprintf("the page to show %s (%s = %q)", what, expr, want), func() bool {
		if g := tb.Eval(expr); g != got {
			got = g
			tb.b.t.Logf("%s = %q", expr, got)
		}
		return got == want
	})
}

// Click clicks the element sel names once it is visible.
func (tb *Tab) Click(sel string) {
	tb.b.t.Helper()
	tb.Do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// Screenshot saves the whole page as <dir>/<name>.png and returns the
// file's path.
func (tb *Tab) Screenshot(name string) string {
	tb.b.t.Helper()
	png := run(tb, chromedp.FullScreenshot(100)) // 100 is PNG; any other quality is JPEG
	dir := tb.b.shotDir()
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.b.t.Fatal(err)
	}
	return path
}

// shotDir is the screenshot folder of this test, made on first use.
func (b *Browser) shotDir() string {
	if b.shots != "" {
		return b.shots
	}
	root := os.Getenv("AIRLOCK_SCREENSHOTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "airlock-screenshots")
	}
	b.shots = filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name()))
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshots in %s", b.shots)
	return b.shots
}
