package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
)

// Tools in the page: the view page as the page executor (PROTOCOL section
// 6.1) serving page-notes to callers of POST /v1/calls, driven through
// its controls in headless Chromium.

const servingState = `document.getElementById("serving").dataset.state`

// openTools opens the view URL of m at base and waits for the tools panel.
func openTools(t *testing.T, b *browsertest.Tab, m *localclient.Minted, base string) {
	t.Helper()
	b.Navigate(m.ViewURL(base))
	b.WaitFor("the tools panel", `document.getElementById("tools").dataset.ready`, "true")
	b.WaitFor("serving off", servingState, "off")
}

// notesOf is the expression "how many notes of source the page lists".
func notesOf(source string) string {
	return `String(document.querySelectorAll('#notes-list li[data-source="` + source + `"]').length)`
}

// pageTools lists the broker's descriptors with their executor and tools.
func pageTools(t *testing.T, p *proc) map[string]wire.Descriptor {
	t.Helper()
	code, data, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": sessionToken}, nil)
	var out struct{ Descriptors []wire.Descriptor }
	if code != 200 || json.Unmarshal(data, &out) != nil {
		t.Fatalf("GET /v1/tools: %d %s", code, data)
	}
	m := map[string]wire.Descriptor{}
	for _, d := range out.Descriptors {
		m[d.DescriptorID] = d
	}
	return m
}

// callPage runs `airlock call TOOL --descriptor page-notes` and returns
// its exit code and stdout.
func callPage(t *testing.T, p *proc, tool, args string) (int, string) {
	t.Helper()
	return callDescriptor(t, p, "page-notes", tool, args)
}

// callDescriptor runs `airlock call TOOL --descriptor ID` and returns its
// exit code and stdout.
func callDescriptor(t *testing.T, p *proc, id, tool, args string) (int, string) {
	t.Helper()
	code, out, errOut := runCLI(t, []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}, "call", tool, "--descriptor", id, "--broker", p.URL(), "--args", args)
	t.Logf("airlock call %s.%s %s: exit %d\n%s%s", id, tool, args, code, out, errOut)
	return code, out
}

func writeNote(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBrowserPageTools: a note picked through the file input and stored
// in OPFS survives a reload; with serving on, /v1/tools lists page-notes
// as executor page and `airlock call` reads, lists and searches the
// page's notes, a missing note answering exec-threw "tool error: …" and
// one over maxOutputBytes output-too-large; each call is shown in the
// page. A second tab that turns serving on replaces
// the first (which says so and stays off) and takes the calls; turning it
// off unlists page-notes, and a stored note the user removes is gone.
func TestBrowserPageTools(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	a := br.First()
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: p.URL()})
	openTools(t, a, m, p.URL())
	if _, listed := pageTools(t, p)["page-notes"]; listed {
		t.Fatal("page-notes listed before the user turned serving on")
	}

	dir := t.TempDir()
	hello := writeNote(t, dir, "hello.md", "# Hello\nthe page holds this line\n")
	scratch := writeNote(t, dir, "scratch.txt", "picked, never stored\n")
	a.Do(chromedp.SetUploadFiles(chromedp.CSS("#pick"), []string{hello}))
	a.WaitFor("one picked note", notesOf("picked"), "1")
	a.Click("#store-picked")
	a.WaitFor("the note stored in OPFS", notesOf("stored"), "1")
	a.WaitFor("no picked note left", notesOf("picked"), "0")
	// OPFS persists; picked files live in the tab's memory only.
	a.Do(chromedp.Reload())
	a.WaitFor("the tools panel after a reload", `document.getElementById("tools").dataset.ready`, "true")
	a.WaitFor("the stored note after a reload", text(`#notes-list li[data-source="stored"] .code`), "hello.md")
	a.Do(chromedp.SetUploadFiles(chromedp.CSS("#pick"), []string{scratch}))
	a.WaitFor("the picked note", text(`#notes-list li[data-source="picked"] .code`), "scratch.txt")
	a.Screenshot("tools-off-with-notes")

	a.Click("#serve")
	a.WaitFor("serving", servingState, "serving")
	a.WaitFor("the catalog shown", has("#catalog", "page-notes"), "true")
	var d wire.Descriptor
	testkit.Eventually(t, "page-notes to be listed", func() bool { d = pageTools(t, p)["page-notes"]; return d.Executor == "page" })
	if len(d.Tools) != 3 || d.Bounds.TimeoutMs != 5000 || d.Bounds.MaxOutputBytes != 262144 {
		t.Errorf("page-notes as listed: %+v", d)
	}

	if code, out := callPage(t, p, "read_notes", `{"path":"hello.md"}`); code != 0 || !strings.Contains(out, "the page holds this line") {
		t.Errorf("read_notes hello.md: exit %d %s", code, out)
	}
	if code, out := callPage(t, p, "read_notes", `{"path":"scratch.txt"}`); code != 0 || !strings.Contains(out, "picked, never stored") {
		t.Errorf("read_notes scratch.txt: exit %d %s", code, out)
	}
	code, out := callPage(t, p, "read_notes", `{"path":"missing.md"}`)
	if code != exitcode.Refused || !strings.Contains(out, `"refused": "exec-threw"`) || !strings.Contains(out, `"why": "tool error: no note named \"missing.md\"`) {
		t.Errorf("read_notes of a missing note: exit %d %s", code, out)
	}
	if code, out := callPage(t, p, "list_notes", `{}`); code != 0 || !strings.Contains(out, `"hello.md"`) || !strings.Contains(out, `"scratch.txt"`) {
		t.Errorf("list_notes: exit %d %s", code, out)
	}
	if code, out := callPage(t, p, "search_notes", `{"query":"HOLDS"}`); code != 0 || !strings.Contains(out, `"line": 2`) {
		t.Errorf("search_notes: exit %d %s", code, out)
	}
	if code, out := callPage(t, p, "search_notes", `{"query":" "}`); code != exitcode.Refused || !strings.Contains(out, "tool error: the query is empty") {
		t.Errorf("search_notes of an empty query: exit %d %s", code, out)
	}
	// maxOutputBytes (262144) is the door's bound too: a 300 kB note is
	// answered output-too-large by the page itself.
	big := writeNote(t, dir, "big.txt", strings.Repeat("0123456789abcdef\n", 300_000/17))
	a.Do(chromedp.SetUploadFiles(chromedp.CSS("#pick"), []string{big}))
	a.WaitFor("the big note picked", text(`#notes-list li[data-path="big.txt"] .code`), "big.txt")
	if code, out := callPage(t, p, "read_notes", `{"path":"big.txt"}`); code != exitcode.Refused || !strings.Contains(out, `"refused": "output-too-large"`) {
		t.Errorf("read_notes of a note over maxOutputBytes: exit %d %s", code, out)
	}
	a.WaitFor("the door's refusal shown", has("#calls li:first-child", "refused output-too-large"), "true")
	a.WaitFor("seven calls shown", text("#calls-count"), "7")
	a.WaitFor("the refused read shown with its why", `String([...document.querySelectorAll('#calls li[data-outcome="refused"][data-tool="read_notes"]')].some((li) => li.textContent.includes("tool error: no note named")))`, "true")
	a.WaitFor("ok calls shown", `String(document.querySelectorAll('#calls li[data-outcome="ok"]').length)`, "4")
	a.Screenshot("tools-serving")

	// A second tab (another session of the same origin: OPFS is shared,
	// the picked file is not) turns serving on and replaces the first.
	m2 := p.mintFor(t, localclient.MintOptions{LaunchOrigin: p.URL()})
	b := br.NewTab()
	openTools(t, b, m2, p.URL())
	b.WaitFor("the stored note in the second tab", text(`#notes-list li[data-source="stored"] .code`), "hello.md")
	b.Click("#serve")
	b.WaitFor("the second tab serving", servingState, "serving")
	a.WaitFor("the first tab replaced", servingState, "replaced")
	a.WaitFor("the first tab says so", has("#serve-note", "Another tab now serves the tools"), "true")
	a.WaitFor("the first tab's control off", `String(document.getElementById("serve").checked)`, "false")

	if code, out := callPage(t, p, "read_notes", `{"path":"hello.md"}`); code != 0 || !strings.Contains(out, "the page holds this line") {
		t.Errorf("read_notes through the second tab: exit %d %s", code, out)
	}
	// scratch.txt was picked in the first tab only: the second answers.
	if code, out := callPage(t, p, "read_notes", `{"path":"scratch.txt"}`); code != exitcode.Refused || !strings.Contains(out, "tool error: no note named") {
		t.Errorf("read_notes scratch.txt through the second tab: exit %d %s", code, out)
	}
	b.WaitFor("the second tab's calls", text("#calls-count"), "2")
	// The first tab did not come back: it took none of them and still
	// shows the replacement, and the second still serves.
	a.WaitFor("the first tab's calls unchanged", text("#calls-count"), "7")
	a.WaitFor("the first tab still replaced", servingState, "replaced")
	b.WaitFor("the second tab still serving", servingState, "serving")
	a.Screenshot("tools-replaced-first-tab")
	b.Screenshot("tools-second-tab-serving")

	// Off: the page withdraws its catalog (an empty one replaces it).
	b.Click("#serve")
	b.WaitFor("the second tab off", servingState, "off")
	testkit.Eventually(t, "page-notes to be unlisted", func() bool { _, listed := pageTools(t, p)["page-notes"]; return !listed })

	// A stored note removed from the page is gone from OPFS.
	b.Click(`#notes-list li[data-path="hello.md"] button`)
	b.WaitFor("no stored note", notesOf("stored"), "0")
	b.Do(chromedp.Reload())
	b.WaitFor("the tools panel after a reload", `document.getElementById("tools").dataset.ready`, "true")
	b.WaitFor("still no stored note after a reload", notesOf("stored"), "0")
}

// TestBrowserPageToolsForeignOrigin: a session minted for an origin that
// is not the broker's (here a launcher's own server on another port,
// which forwards the page and its sockets to the broker) cannot make its
// page an executor: the broker closes /local/channel 1008
// executor-unauthenticated, the page shows it and does not retry.
func TestBrowserPageToolsForeignOrigin(t *testing.T) {
	p := startSessions(t)
	target, err := url.Parse(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	// Started before the browser, so it is closed after the browser is.
	launcher := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }})
	t.Cleanup(launcher.Close)
	br := browsertest.Start(t)
	a := br.First()
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: launcher.URL})
	openTools(t, a, m, launcher.URL)

	a.Click("#serve")
	a.WaitFor("the refusal", servingState, "refused")
	a.WaitFor("the reason shown", has("#serve-note", "1008 executor-unauthenticated"), "true")
	a.WaitFor("the control off", `String(document.getElementById("serve").checked)`, "false")
	if _, listed := pageTools(t, p)["page-notes"]; listed {
		t.Error("a page on another origin serves page-notes")
	}
	a.Screenshot("tools-refused-foreign-origin")
}
