package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/executors/testkit"
)

// The browser test drives the built-in view page in a real headless
// Chromium over the DevTools protocol (spoken with coder/websocket, no
// other dependency). It skips when /usr/bin/chromium is absent, unless
// AIRLOCK_REQUIRE_CHROMIUM=1 (CI), where it fails instead.

const chromiumPath = "/usr/bin/chromium"

// browser is a headless Chromium and a DevTools connection to one page.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	ws      *websocket.Conn
	session string // the page's DevTools session id
	nextID  int
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("chromium is required (AIRLOCK_REQUIRE_CHROMIUM=1) but %s is missing: apt-get install chromium", chromiumPath)
		}
		t.Skipf("%s not installed (apt-get install chromium)", chromiumPath)
	}
	dir := t.TempDir()
	cmd := exec.Command(chromiumPath, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir="+dir, "--remote-debugging-port=0", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, cmd: cmd}
	t.Cleanup(b.stop)
	port, path := devToolsAddress(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port+path, nil)
	if err != nil {
		t.Fatalf("devtools dial: %v", err)
	}
	ws.SetReadLimit(64 << 20)
	b.ws = ws
	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	return b
}

// devToolsAddress reads the port and browser path Chromium writes once
// its DevTools server listens.
func devToolsAddress(t *testing.T, dir string) (string, string) {
	t.Helper()
	var lines []string
	testkit.Eventually(t, "chromium to open its DevTools port", func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		return err == nil && len(lines) == 2
	})
	return lines[0], lines[1]
}

// call sends one DevTools command and decodes its result.
func (b *browser) call(method string, params any, out any) {
	b.t.Helper()
	b.nextID++
	id := b.nextID
	msg := map[string]any{"id": id, "method": method, "params": params}
	if b.session != "" {
		msg["sessionId"] = b.session
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data, _ := json.Marshal(msg)
	if err := b.ws.Write(ctx, websocket.MessageText, data); err != nil {
		b.t.Fatalf("devtools %s: %v", method, err)
	}
	for {
		_, data, err := b.ws.Read(ctx)
		if err != nil {
			b.t.Fatalf("devtools %s: %v", method, err)
		}
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &resp) != nil || resp.ID != id {
			continue // an event
		}
		if resp.Error != nil {
			b.t.Fatalf("devtools %s: %s", method, resp.Error.Message)
		}
		if out != nil {
			_ = json.Unmarshal(resp.Result, out)
		}
		return
	}
}

// eval evaluates a JavaScript expression in the page and returns its
// value as a string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	return fmt.Sprint(r.Result.Value)
}

// waitFor polls a page expression until it evaluates to want, logging
// each value it sees on the way (shown if the test fails).
func (b *browser) waitFor(what, expr, want string) {
	b.t.Helper()
	got := ""
	testkit.Eventually(b.t, fmt.Sprintf("the page to show %s (%s = %q)", what, expr, want), func() bool {
		if g := b.eval(expr); g != got {
			got = g
			b.t.Logf("%s = %q", expr, got)
		}
		return got == want
	})
}

func (b *browser) stop() {
	if b.ws != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		data, _ := json.Marshal(map[string]any{"id": 999999, "method": "Browser.close"})
		_ = b.ws.Write(ctx, websocket.MessageText, data)
		cancel()
		_ = b.ws.CloseNow()
	}
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // our own process group
		<-done
	}
}

// TestBrowserViewPage: mint with the broker's own origin, open the view
// URL in headless Chromium; the page bootstraps, clears its fragment,
// connects, asks for a snapshot, and shows host state relayed by the test,
// which plays the host.
func TestBrowserViewPage(t *testing.T) {
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	host, _ := p.host(t, m)
	b := startBrowser(t)
	b.call("Page.navigate", map[string]any{"url": m.ViewURL(p.URL())}, nil)

	vs := payload(host.expect("viewState"))
	if vs["state"] != "connected" {
		t.Fatalf("viewState %v", vs)
	}
	ask := host.expect("snapshotRequest")
	if v, ok := payload(ask)["lastHostSequence"]; !ok || v != nil {
		t.Fatalf("snapshotRequest %s", ask.Raw)
	}
	host.send("snapshot", map[string]any{"atHostSequence": 0, "state": map[string]any{"activeTarget": map[string]any{"file": "model.py"}}}, 0)
	host.send("focusNode", map[string]any{"nodeId": "layer-7"}, 1)

	b.waitFor("the relayed focusNode", `(document.querySelector('dd[data-type="focusNode"]')||{}).textContent`, `{"nodeId":"layer-7"}`)
	b.waitFor("the snapshot", `(document.querySelector('dd[data-type="activeTarget"]')||{}).textContent`, `{"file":"model.py"}`)
	b.waitFor("the sequence", `document.getElementById('seq').textContent`, "1")
	b.waitFor("an open socket", `document.getElementById('conn').dataset.state`, "open")
	b.waitFor("a connected host", `document.getElementById('host').dataset.state`, "connected")
	b.waitFor("the phase", `document.getElementById('phase').dataset.phase`, "ready")
	b.waitFor("a cleared fragment", `location.hash`, "")
	b.waitFor("an HttpOnly cookie", `document.cookie`, "")
	b.waitFor("the session id", `document.getElementById('session').textContent`, m.WorkspaceSessionID)

	// The credential in the URL was used once: a second page with it is refused.
	if status, _, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil); status != 401 {
		t.Fatalf("the page's credential still works: %d", status)
	}
	// The host leaves: the page shows it.
	_ = host.Close()
	b.waitFor("the host leaving", `document.getElementById('host').dataset.state`, "disconnected")
}
