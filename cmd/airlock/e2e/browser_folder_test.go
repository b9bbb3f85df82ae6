package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
)

// The handle root: a folder the user grants the view page through the
// File System Access API, served read-only as the descriptor page-folder.

const folderState = `document.getElementById("folder").dataset.state`

// pickerStandIn replaces the browser's directory picker in this tab with
// one that opens no dialog and returns the root of the origin's private
// file system, a directory handle with the picker's interface; it keeps
// the options the page asked with.
const pickerStandIn = `window.showDirectoryPicker = async (opts) => { window.__picked = opts; return navigator.storage.getDirectory(); }; "replaced"`

// opfsTree is an async function body whose value is every entry under
// the OPFS root, with each file's size, as sorted text.
const opfsTree = `const out = [];
async function walk(dir, path) {
  for await (const [name, h] of dir.entries()) {
    if (h.kind === "directory") { out.push(path + name + "/"); await walk(h, path + name + "/"); }
    else out.push(path + name + " " + (await h.getFile()).size);
  }
}
await walk(await navigator.storage.getDirectory(), "");
return out.sort().join("\n");`

// evalAsync runs body as an async function in the tab and returns its
// value, or fails the test with the error it threw.
func evalAsync(t *testing.T, tab *browsertest.Tab, body string) string {
	t.Helper()
	tab.Eval(`window.__async = { done: false }; (async () => {` + body + `})().then((v) => { window.__async = { done: true, v: String(v) }; }, (e) => { window.__async = { done: true, err: String(e) }; }); "started"`)
	testkit.Eventually(t, "an async evaluation in the page", func() bool { return tab.Eval(`String(window.__async.done)`) == "true" })
	if e := tab.Eval(`String(window.__async.err ?? "")`); e != "" {
		t.Fatalf("in the page: %s", e)
	}
	return tab.Eval(`window.__async.v`)
}

// TestBrowserPageFolderRoot: a folder granted through the picker (here
// OPFS's root handle in its place, holding a file and a nested folder) is
// remembered across a reload; with serving on, /v1/tools lists
// page-folder with the root handle, apart from page-notes, and `airlock
// call` lists and reads its files. Paths that climb out, are absolute,
// hold a backslash or an empty segment, and names that are not there or
// are folders are refused exec-threw "tool error: …" by name; no tool
// writes (a write tool is unknown-tool) and the folder is unchanged after
// every call.
func TestBrowserPageFolderRoot(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	a := br.First()
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: p.URL()})
	openTools(t, a, m, p.URL())
	a.WaitFor("no folder granted", folderState, "none")

	evalAsync(t, a, `const root = await navigator.storage.getDirectory();
const put = async (dir, name, text) => { const w = await (await dir.getFileHandle(name, { create: true })).createWritable(); await w.write(text); await w.close(); };
await put(root, "readme.md", "# Folder\nread from the granted folder\n");
await put(await root.getDirectoryHandle("sub", { create: true }), "deep.txt", "a nested line\n");`)
	a.Eval(pickerStandIn)
	a.Click("#grant-folder")
	a.WaitFor("the folder granted", folderState, "granted")
	if mode := a.Eval(`String(window.__picked && window.__picked.mode)`); mode != "read" {
		t.Errorf("the page asked the picker for mode %q, want read", mode)
	}

	// Remembered: after a reload the page finds the handle again, with
	// no picker (the stand-in is gone with the old document).
	a.Do(chromedp.Reload())
	a.WaitFor("the tools panel after a reload", `document.getElementById("tools").dataset.ready`, "true")
	a.WaitFor("the folder still granted after a reload", folderState, "granted")
	before := evalAsync(t, a, opfsTree)
	a.Click("#serve")
	a.WaitFor("serving", servingState, "serving")
	a.WaitFor("the handle root in the page's catalog", has("#catalog", "handle"), "true")

	testkit.Eventually(t, "page-folder to be listed", func() bool { return pageTools(t, p)["page-folder"].Executor == "page" })
	tools := pageTools(t, p)
	d := tools["page-folder"]
	var names []string
	for _, tool := range d.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(d.Bounds.Roots, []string{"handle"}) || !slices.Equal(names, []string{"list_files", "read_file"}) {
		t.Errorf("page-folder as listed: roots %q, tools %q", d.Bounds.Roots, names)
	}
	if slices.Contains(tools["page-notes"].Bounds.Roots, "handle") {
		t.Errorf("page-notes names the handle root: %q", tools["page-notes"].Bounds.Roots)
	}

	if code, out := callDescriptor(t, p, "page-folder", "read_file", `{"path":"readme.md"}`); code != 0 || !strings.Contains(out, "read from the granted folder") {
		t.Errorf("read_file readme.md: exit %d %s", code, out)
	}
	if code, out := callDescriptor(t, p, "page-folder", "read_file", `{"path":"sub/deep.txt"}`); code != 0 || !strings.Contains(out, "a nested line") {
		t.Errorf("read_file sub/deep.txt: exit %d %s", code, out)
	}
	if code, out := callDescriptor(t, p, "page-folder", "list_files", `{}`); code != 0 || !strings.Contains(out, `"readme.md"`) || !strings.Contains(out, `"sub/deep.txt"`) {
		t.Errorf("list_files: exit %d %s", code, out)
	}

	const outside = `"why": "tool error: path must be relative to the folder`
	for _, path := range []string{"../readme.md", "sub/../readme.md", "..", "/readme.md", `sub\\deep.txt`, `\\readme.md`, "sub//deep.txt", "sub/", "./readme.md", ""} {
		code, out := callDescriptor(t, p, "page-folder", "read_file", fmt.Sprintf(`{"path":"%s"}`, path))
		if code != exitcode.Refused || !strings.Contains(out, `"refused": "exec-threw"`) || !strings.Contains(out, outside) {
			t.Errorf("read_file %s: exit %d %s", path, code, out)
		}
	}
	code, out := callDescriptor(t, p, "page-folder", "read_file", `{"path":"missing.md"}`)
	if code != exitcode.Refused || !strings.Contains(out, `"refused": "exec-threw"`) || !strings.Contains(out, `"why": "tool error: no file named \"missing.md\" in the folder`) {
		t.Errorf("read_file of a missing file: exit %d %s", code, out)
	}
	code, out = callDescriptor(t, p, "page-folder", "read_file", `{"path":"sub"}`)
	if code != exitcode.Refused || !strings.Contains(out, `"refused": "exec-threw"`) || !strings.Contains(out, `"why": "tool error: \"sub\" is a folder`) {
		t.Errorf("read_file of a folder: exit %d %s", code, out)
	}

	// Read-only: no tool writes (a call for one, sent to /v1/calls with
	// the admitted bounds, is unknown-tool), and the folder is as it was.
	bounds, err := json.Marshal(d.Bounds)
	if err != nil {
		t.Fatal(err)
	}
	write := `{"v":1,"callId":"write-1","descriptorId":"page-folder","tool":"write_file","args":{"path":"readme.md","text":"overwritten"},"boundsEcho":` + string(bounds) + `}`
	status, answer, _ := p.do("POST", "/v1/calls", map[string]string{"X-Tensorviz-Token": sessionToken}, []byte(write))
	var refusal struct {
		Ok      bool
		Refused string
	}
	if status != 200 || json.Unmarshal(answer, &refusal) != nil || refusal.Ok || refusal.Refused != "unknown-tool" {
		t.Errorf("write_file: %d %s", status, answer)
	}
	if after := evalAsync(t, a, opfsTree); after != before {
		t.Errorf("the folder changed under the calls:\nbefore\n%s\nafter\n%s", before, after)
	}
	a.Screenshot("tools-folder-serving")
}

// plantGrant is an async function body that replaces the page's
// remembered grant in IndexedDB with the handle the expression HANDLE
// gives and the tag TAG gives (rec is the record there now), as script a
// squatter serves on this origin once the broker stops can.
const plantGrant = `const root = await navigator.storage.getDirectory();
const db = await new Promise((ok, no) => { const r = indexedDB.open("airlock-view", 1); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
const tx = (mode) => db.transaction("grants", mode).objectStore("grants");
const rec = await new Promise((ok, no) => { const r = tx("readonly").get("handle"); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
if (!rec) throw new Error("no remembered grant to replace");
const planted = { handle: HANDLE, tag: TAG };
await new Promise((ok, no) => { const r = tx("readwrite").put(planted, "handle"); r.onsuccess = () => ok(); r.onerror = () => no(r.error); });
db.close();
return "planted";`

// TestBrowserPageFolderPlantedGrantIsForgotten: script on the page's
// origin (a squatter on the port once the broker stops) cannot choose the
// folder the next page serves as the user's. A remembered grant whose
// handle it swapped for a folder of its own in the private storage (the
// real tag kept), or whose tag it forged, is forgotten at the next load,
// and page-folder is not offered; a picker that answers with a folder
// inside the private storage is refused.
func TestBrowserPageFolderPlantedGrantIsForgotten(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	a := br.First()
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: p.URL()})
	openTools(t, a, m, p.URL())
	grant := func() {
		t.Helper()
		a.Eval(pickerStandIn)
		a.Click("#grant-folder")
		a.WaitFor("the folder granted", folderState, "granted")
	}
	reload := func(what string) {
		t.Helper()
		a.Do(chromedp.Reload())
		a.WaitFor("the tools panel after a reload", `document.getElementById("tools").dataset.ready`, "true")
		a.WaitFor(what, folderState, "none")
		a.WaitFor("the page says it forgot the grant", has("#serve-note", "is forgotten"), "true")
	}

	grant()
	evalAsync(t, a, strings.NewReplacer("HANDLE", `await root.getDirectoryHandle("planted", { create: true })`, "TAG", "rec.tag").Replace(plantGrant))
	reload("a swapped handle not taken")

	grant()
	evalAsync(t, a, strings.NewReplacer("HANDLE", "root", "TAG", "crypto.getRandomValues(new Uint8Array(64))").Replace(plantGrant))
	reload("a forged tag not taken")

	a.Eval(`window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle("planted", { create: true }); "replaced"`)
	a.Click("#grant-folder")
	a.WaitFor("a folder inside the private storage refused", has("#serve-note", "inside this browser's private storage"), "true")
	a.WaitFor("still no folder", folderState, "none")

	a.Click("#serve")
	a.WaitFor("serving", servingState, "serving")
	testkit.Eventually(t, "page-notes to be listed", func() bool { return pageTools(t, p)["page-notes"].Executor == "page" })
	if d, listed := pageTools(t, p)["page-folder"]; listed {
		t.Errorf("page-folder offered with no folder granted: %+v", d)
	}
}

// permissionPrompt, run in every new document of the tab, makes the
// browser answer "prompt" to queryPermission, as it does for a folder
// after a restart or once the origin's last tab closed, and "granted" to
// requestPermission, as when the user allows it; it records each mode
// asked in window.__asked.
const permissionPrompt = `window.__asked = [];
FileSystemHandle.prototype.queryPermission = async function (d) { window.__asked.push("query " + (d && d.mode)); return "prompt"; };
FileSystemHandle.prototype.requestPermission = async function (d) { window.__asked.push("request " + (d && d.mode)); return "granted"; };`

// onNewDocument runs script in every document the tab opens from now on.
func onNewDocument(script string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		return chromedp.Void{}, err
	}
}

// TestBrowserPageFolderAsksAgain: after a reload where the browser wants
// the user to allow reading the remembered folder again, the page offers
// no page-folder until the user clicks to allow it; then it serves the
// folder. The page asks for read access only.
func TestBrowserPageFolderAsksAgain(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	a := br.First()
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: p.URL()})
	openTools(t, a, m, p.URL())
	evalAsync(t, a, `const root = await navigator.storage.getDirectory();
const w = await (await root.getFileHandle("again.md", { create: true })).createWritable();
await w.write("allowed again\n");
await w.close();`)
	a.Eval(pickerStandIn)
	a.Click("#grant-folder")
	a.WaitFor("the folder granted", folderState, "granted")

	a.Do(onNewDocument(permissionPrompt))
	a.Do(chromedp.Reload())
	a.WaitFor("the tools panel after a reload", `document.getElementById("tools").dataset.ready`, "true")
	a.WaitFor("the page waiting for the user", folderState, "prompt")
	a.Click("#serve")
	a.WaitFor("serving", servingState, "serving")
	testkit.Eventually(t, "page-notes to be listed", func() bool { return pageTools(t, p)["page-notes"].Executor == "page" })
	if _, listed := pageTools(t, p)["page-folder"]; listed {
		t.Error("page-folder offered before the user allowed the folder again")
	}

	a.Click("#folder-again")
	a.WaitFor("the folder allowed again", folderState, "granted")
	testkit.Eventually(t, "page-folder to be listed", func() bool { return pageTools(t, p)["page-folder"].Executor == "page" })
	if code, out := callDescriptor(t, p, "page-folder", "read_file", `{"path":"again.md"}`); code != 0 || !strings.Contains(out, "allowed again") {
		t.Errorf("read_file again.md: exit %d %s", code, out)
	}
	if asked := a.Eval(`window.__asked.join(", ")`); asked != "query read, request read" {
		t.Errorf("the page asked the browser for %q, want read access only, asked once then requested", asked)
	}
}
