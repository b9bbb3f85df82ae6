package main

import (
	"testing"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
)

// The browser tests drive the built-in view page in Debian's headless
// Chromium (cmd/airlock/internal/browsertest: found on PATH; skipped when
// absent, unless AIRLOCK_REQUIRE_CHROMIUM=1 as in CI).

// TestBrowserViewPage: mint with the broker's own origin, open the view
// URL in headless Chromium; the page bootstraps, clears its fragment,
// connects, asks for a snapshot, and shows host state relayed by the test,
// which plays the host.
func TestBrowserViewPage(t *testing.T) {
	p := startSessions(t)
	m := p.mintFor(t, localclient.MintOptions{})
	host, _ := p.host(t, m)
	b := browsertest.Start(t).First()
	b.Navigate(m.ViewURL(p.URL()))

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

	b.WaitFor("the relayed focusNode", `(document.querySelector('dd[data-type="focusNode"]')||{}).textContent`, `{"nodeId":"layer-7"}`)
	b.WaitFor("the snapshot", `(document.querySelector('dd[data-type="activeTarget"]')||{}).textContent`, `{"file":"model.py"}`)
	b.WaitFor("the sequence", `document.getElementById('seq').textContent`, "1")
	b.WaitFor("an open socket", `document.getElementById('conn').dataset.state`, "open")
	b.WaitFor("a connected host", `document.getElementById('host').dataset.state`, "connected")
	b.WaitFor("the phase", `document.getElementById('phase').dataset.phase`, "ready")
	b.WaitFor("a cleared fragment", `location.hash`, "")
	b.WaitFor("an HttpOnly cookie", `document.cookie`, "")
	b.WaitFor("the session id", `document.getElementById('session').textContent`, m.WorkspaceSessionID)

	// The credential in the URL was used once: a second page with it is refused.
	if status, _, _ := bootstrapRaw(p, m.LaunchOrigin, m.WorkspaceSessionID, m.ViewCredential, nil); status != 401 {
		t.Fatalf("the page's credential still works: %d", status)
	}
	// The host leaves: the page shows it.
	_ = host.Close()
	b.WaitFor("the host leaving", `document.getElementById('host').dataset.state`, "disconnected")
}
