package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/chromedp/chromedp"
)

// The browser tests drive the built-in view page in Debian's headless
// Chromium (cmd/airlock/internal/browsertest: found on PATH; skipped when
// absent, unless AIRLOCK_REQUIRE_CHROMIUM=1 as in CI). The test plays the
// host, so it decides when each reply arrives: nothing waits on a timer.

// text is the expression of an element's trimmed text ("" when absent).
func text(sel string) string {
	return `((document.querySelector(` + jsString(sel) + `)||{}).textContent||"").trim()`
}

// has is the expression "sel's text contains want".
func has(sel, want string) string {
	return `String(` + text(sel) + `.includes(` + jsString(want) + `))`
}

func attr(sel, name string) string {
	return `String((document.querySelector(` + jsString(sel) + `)||{getAttribute(){return null}}).getAttribute(` + jsString(name) + `))`
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// until reads host messages until one of type typ, skipping the others
// (viewState, acks), and returns it.
func (s *sock) until(typ string) *localclient.Message {
	s.t.Helper()
	for {
		m := s.next()
		if m.Type == typ {
			return m
		}
		s.t.Logf("%s: skipping %s while waiting for %s", s.name, m.Type, typ)
	}
}

// reply answers a view request with its requestId and target and extra.
func (s *sock) reply(req *localclient.Message, typ string, extra map[string]any) {
	s.t.Helper()
	p := payload(req)
	out := map[string]any{"requestId": p["requestId"], "target": p["target"]}
	for k, v := range extra {
		out[k] = v
	}
	s.send(typ, out, 0)
}

var demoState = map[string]any{
	"activeTarget": map[string]any{"file": "model.py", "symbol": "Net"},
	"projection": map[string]any{"file": "model.py",
		"nodes": []any{map[string]any{"id": "input", "label": "input", "line": 10}, map[string]any{"id": "conv1", "label": "conv1", "line": 13},
			map[string]any{"id": "relu1", "label": "relu1", "line": 16}},
		"edges": []any{map[string]any{"from": "input", "to": "conv1"}, map[string]any{"from": "conv1", "to": "relu1"}}},
	"focusNode": map[string]any{"nodeId": "input"},
}

// openView mints (with canProposeSourceEdits), connects the host, opens
// the view URL and answers the page's first snapshot; it returns when the
// page shows fresh state.
func openView(t *testing.T, p *proc, b *browsertest.Tab, base string) (*localclient.Minted, *sock) {
	t.Helper()
	m := p.mintFor(t, localclient.MintOptions{LaunchOrigin: base, CanProposeSourceEdits: true})
	host, _ := p.host(t, m)
	b.Navigate(m.ViewURL(base))
	if vs := payload(host.until("viewState")); vs["state"] != "connected" {
		t.Fatalf("viewState %v", vs)
	}
	ask := host.until("snapshotRequest")
	if v, ok := payload(ask)["lastHostSequence"]; !ok || v != nil {
		t.Fatalf("first snapshotRequest %s", ask.Raw)
	}
	host.send("snapshot", map[string]any{"atHostSequence": 0, "state": demoState}, 0)
	b.WaitFor("fresh state", `document.getElementById("fresh").dataset.state`, "fresh")
	return m, host
}

// TestBrowserViewPage is the full flow through the page's controls: mint,
// open, bootstrap (fragment cleared, HttpOnly cookie), relay rendered
// readably, then every view-originated family of PROTOCOL section 4 with
// its progress, cancel, refusal and result shown next to its control, the
// host leaving (stale, no-host refusal) and a new host epoch.
func TestBrowserViewPage(t *testing.T) {
	p := startSessions(t)
	br := browsertest.Start(t)
	b := br.First()
	m, host := openView(t, p, b, p.URL())

	b.WaitFor("an open socket", `document.getElementById("conn").dataset.state`, "open")
	b.WaitFor("a connected host", `document.getElementById("host").dataset.state`, "connected")
	b.WaitFor("epoch 1", text("#epoch"), "1")
	b.WaitFor("a cleared fragment", `location.hash`, "")
	b.WaitFor("an HttpOnly cookie", `document.cookie`, "")
	b.WaitFor("the session id", text("#session"), m.WorkspaceSessionID)
	b.WaitFor("the active target", text("#target"), "model.py · Net")
	b.WaitFor("the graph's nodes", `String(document.querySelectorAll("#nodes button.node").length)`, "3")
	b.WaitFor("the focused node", attr(`#nodes button[data-node="input"]`, "aria-current"), "true")
	b.WaitFor("the edges", has("#nodes", "→ conv1"), "true")
	b.WaitFor("raw JSON only in a closed detail view", `String(document.getElementById("raw").open)`, "false")
	// The credential in the URL was used once: a second page with it is refused.
	if status, _, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil); status != 401 {
		t.Fatalf("the page's credential still works: %d", status)
	}

	// Ordered state moves the highlight.
	host.send("focusNode", map[string]any{"nodeId": "conv1"}, 1)
	host.send("syncState", map[string]any{"state": "synced", "at": "2026-12-01T12:00:00Z"}, 2)
	b.WaitFor("the new focus", attr(`#nodes button[data-node="conv1"]`, "aria-current"), "true")
	b.WaitFor("the sync state", text("#sync"), "synced at 2026-12-01T12:00:00Z")
	b.WaitFor("the sequence", text("#seq"), "2")
	b.Screenshot("01-connected")

	// Reveal: a click on a node.
	b.Click(`#nodes button[data-node="relu1"]`)
	if rv := payload(host.until("revealNode")); rv["nodeId"] != "relu1" {
		t.Fatalf("revealNode %v", rv)
	}
	b.WaitFor("the reveal sent", has("#reveal-out", "reveal relu1"), "true")
	// The keyboard does the same: focus a node, press Enter.
	b.Do(chromedp.Focus(chromedp.CSS(`#nodes button[data-node="input"]`)), chromedp.KeyEvent("\r"))
	if rv := payload(host.until("revealNode")); rv["nodeId"] != "input" {
		t.Fatalf("revealNode by keyboard %v", rv)
	}
	// Every control is a native, focusable element with a name; status is
	// announced.
	b.WaitFor("controls without a name", `String(Array.from(document.querySelectorAll("button, textarea, a, input")).filter(e =>
		e.tabIndex < 0 || !((e.textContent || "").trim() || (e.labels && e.labels.length) || e.getAttribute("aria-label"))).length)`, "0")
	b.WaitFor("a live status line", attr("#status", "aria-live"), "polite")

	// Validate.
	b.Click("#validate .go")
	req := host.until("validateRequest")
	if tg, _ := payload(req)["target"].(map[string]any); tg["file"] != "model.py" {
		t.Fatalf("validate target %s", req.Raw)
	}
	b.WaitFor("validate pending", `document.getElementById("validate").dataset.state`, "pending")
	host.reply(req, "validateResult", map[string]any{"valid": false, "diagnostics": []any{map[string]any{"severity": "error", "message": "shape mismatch at conv1"}}})
	b.WaitFor("validate's result", has("#validate .out", "shape mismatch at conv1"), "true")
	b.WaitFor("validate's verdict", attr("#validate .out [data-valid]", "data-valid"), "false")

	// Capture and inspect: cancelled while running, then answered.
	b.Click("#captureInspect .go")
	req = host.until("captureInspectRequest")
	b.WaitFor("capture in progress", has("#captureInspect .out", "waiting for the host"), "true")
	b.Screenshot("02-capture-in-progress")
	b.Click("#captureInspect .cancel")
	if c := payload(host.until("captureInspectCancel")); c["requestId"] != payload(req)["requestId"] {
		t.Fatalf("cancel of another request: %v", c)
	}
	b.WaitFor("capture cancelled", `document.getElementById("captureInspect").dataset.state`, "cancelled")
	// The host's reply to the cancelled request is dropped by the broker:
	// the page stays cancelled (the next request proves it was dropped).
	host.reply(req, "captureInspectResult", map[string]any{"capture": map[string]any{"node": "late"}})
	b.Click("#captureInspect .go")
	req = host.until("captureInspectRequest")
	host.reply(req, "captureInspectResult", map[string]any{"capture": map[string]any{"node": "conv1", "mean": 0.137}})
	b.WaitFor("capture's result", has("#captureInspect .out", "conv1"), "true")
	if strings.Contains(b.Eval(text("#captureInspect .out")), "late") {
		t.Fatal("a reply to a cancelled request reached the page")
	}

	// Export.
	b.Click("#export .go")
	req = host.until("exportRequest")
	if payload(req)["format"] != "json" {
		t.Fatalf("export %s", req.Raw)
	}
	b.Click("#export .cancel")
	host.until("exportCancel")
	b.WaitFor("export cancelled", `document.getElementById("export").dataset.state`, "cancelled")
	b.Click("#export .go")
	req = host.until("exportRequest")
	host.reply(req, "exportResult", map[string]any{"format": "json", "bytes": 2048})
	b.WaitFor("export's result", has("#export .out", "2048"), "true")

	// Source edit: the host's review (a diff), then accepted; then rejected.
	b.Do(chromedp.SetValue(chromedp.CSS("#edit-text"), "use GELU"))
	b.Click("#sourceEdit .go")
	req = host.until("sourceEditRequest")
	if e, _ := payload(req)["edit"].(map[string]any); e["text"] != "use GELU" {
		t.Fatalf("sourceEdit %s", req.Raw)
	}
	host.reply(req, "sourceEditReview", map[string]any{"state": "in-review", "diff": "--- model.py\n+++ model.py\n@@ -16 +16 @@\n-    nn.ReLU()\n+    nn.GELU()\n"})
	b.WaitFor("the review's diff", text("#sourceEdit .diff .add"), "+    nn.GELU()")
	b.Screenshot("03-source-edit-review")
	host.reply(req, "sourceEditResult", map[string]any{"status": "accepted"})
	b.WaitFor("the edit accepted", attr("#sourceEdit [data-edit]", "data-edit"), "accepted")
	b.Click("#sourceEdit .go")
	req = host.until("sourceEditRequest")
	host.reply(req, "sourceEditResult", map[string]any{"status": "rejected"})
	b.WaitFor("the edit rejected", attr("#sourceEdit [data-edit]", "data-edit"), "rejected")

	// Graph publish: signing in (a link), uploading, published (links,
	// never opened by the page).
	tabs := pageTargets(t, b)
	b.Click("#graphPublish .go")
	req = host.until("graphPublishRequest")
	if g := gunzipBase64(t, payload(req)["graphGzipBase64"]); !strings.Contains(g, `"relu1"`) {
		t.Fatalf("graphGzipBase64 holds %q", g)
	}
	host.reply(req, "graphPublishState", map[string]any{"phase": "signing_in", "connectUrl": "https://example.com/connect?x=1"})
	b.WaitFor("the sign-in link", attr("#graphPublish a.ext", "href"), "https://example.com/connect?x=1")
	b.WaitFor("the link opens in a new tab, without opener", attr("#graphPublish a.ext", "rel"), "noopener noreferrer")
	host.reply(req, "graphPublishState", map[string]any{"phase": "uploading"})
	b.WaitFor("uploading", attr("#graphPublish [data-phase]", "data-phase"), "uploading")
	host.reply(req, "graphPublishResult", map[string]any{"status": "published", "graphUrl": "https://example.com/graphs/1", "shareUrl": "http://example.com/share/1"})
	b.WaitFor("published", attr("#graphPublish [data-publish]", "data-publish"), "published")
	b.WaitFor("the links", `Array.from(document.querySelectorAll("#graphPublish a.ext"), a => a.href).join(" ")`, "https://example.com/graphs/1 http://example.com/share/1")
	b.Screenshot("04-published")
	if got := pageTargets(t, b); got != tabs {
		t.Fatalf("the page opened a tab by itself: %d pages, was %d", got, tabs)
	}
	// Cancelled publish.
	b.Click("#graphPublish .go")
	req = host.until("graphPublishRequest")
	b.Click("#graphPublish .cancel")
	if c := payload(host.until("graphPublishCancel")); c["requestId"] != payload(req)["requestId"] {
		t.Fatalf("cancel of another request: %v", c)
	}
	b.WaitFor("publish cancelled", `document.getElementById("graphPublish").dataset.state`, "cancelled")

	// Candidates: the request names the page's own view; a candidate is a
	// node to reveal.
	b.Click("#candidate .go")
	req = host.until("candidateRequest")
	viewID := b.Eval(text("#viewId"))
	if payload(req)["viewId"] != viewID {
		t.Fatalf("candidate %s, the page is %s", req.Raw, viewID)
	}
	host.reply(req, "candidateResult", map[string]any{"viewId": viewID, "candidates": []any{map[string]any{"nodeId": "conv1", "why": "first conv"}}})
	b.WaitFor("a candidate", has("#candidate .out", "first conv"), "true")
	b.Click(`#candidate button[data-node="conv1"]`)
	if rv := payload(host.until("revealNode")); rv["nodeId"] != "conv1" {
		t.Fatalf("revealNode %v", rv)
	}
	b.WaitFor("the event log", has("#log", "candidateRequest"), "false") // the log names families, not wire types
	b.WaitFor("the event log", has("#log", "candidate r"), "true")

	// The host leaves: stale at once; a request is refused (no-host) next
	// to its control.
	host.CloseNow()
	b.WaitFor("the host leaving", `document.getElementById("host").dataset.state`, "disconnected")
	b.WaitFor("stale state", `document.getElementById("fresh").dataset.state`, "stale")
	b.Click("#validate .go")
	b.WaitFor("a no-host refusal", has("#validate .out", "INVALID_MESSAGE (no-host)"), "true")
	b.Screenshot("05-host-left")

	// A new host: epoch 2; the page asks again with no sequence (the old
	// epoch's numbers mean nothing to the new host).
	host2, c2 := p.host(t, m)
	if c2.HostEpoch != 2 {
		t.Fatalf("host epoch %d", c2.HostEpoch)
	}
	ask := host2.until("snapshotRequest")
	if v, ok := payload(ask)["lastHostSequence"]; !ok || v != nil {
		t.Fatalf("snapshotRequest after a new epoch %s", ask.Raw)
	}
	b.WaitFor("epoch 2", text("#epoch"), "2")
	st := map[string]any{"activeTarget": map[string]any{"file": "other.py"}, "focusNode": map[string]any{"nodeId": "relu1"}, "projection": demoState["projection"]}
	host2.send("snapshot", map[string]any{"atHostSequence": 5, "state": st}, 0)
	b.WaitFor("fresh again", `document.getElementById("fresh").dataset.state`, "fresh")
	b.WaitFor("the new host's state", text("#target"), "other.py")
	b.WaitFor("the new sequence", text("#seq"), "5")
	b.Screenshot("06-new-epoch")

	// The used link in another tab (no session of its own) is refused, and
	// says why.
	other := br.NewTab()
	other.Navigate(m.ViewURL(p.URL()))
	other.WaitFor("the used-link screen", `document.getElementById("screen").dataset.kind`, "refused")
	other.WaitFor("its reason", text("#screen-code"), "INVALID_CREDENTIALS [HTTP 401]")
	other.Screenshot("07-used-link")
}

// pageTargets counts the browser's open pages.
func pageTargets(t *testing.T, b *browsertest.Tab) int {
	t.Helper()
	n := 0
	b.Do(func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		ts, err := chromedp.Targets(ctx)
		for _, x := range ts {
			if x.Type == "page" {
				n++
			}
		}
		return chromedp.Void{}, err
	})
	return n
}

func gunzipBase64(t *testing.T, v any) string {
	t.Helper()
	s, _ := v.(string)
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("graphGzipBase64: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("graphGzipBase64: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("graphGzipBase64: %v", err)
	}
	return string(out)
}
