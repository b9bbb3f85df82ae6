package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/mcp/mcptest"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// TestChannelDepartedPageAnswersNoPage: the broker remembers the catalog
// the last page declared (PROTOCOL sections 5.2 and 6.1). Once the page
// has left, its descriptor is still listed by GET /v1/tools and MCP
// tools/list, at executor page, and a call for it is refused no-page at
// once; a newer page is sent none of those calls, and its own catalog
// replaces the remembered set whole. A restart forgets it.
func TestChannelDepartedPageAnswersNoPage(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	mcp := connectHTTP(t, w.broker, http.Header{"X-Tensorviz-Token": {testToken}})
	cookie := chanViewCookie(t, w, w.broker.URL())
	page := w.pageWith(cookie)
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pg", w.slow)}))
	testkit.Eventually(t, "pg routed to the page", func() bool { return w.tools()["pg"] == "page" })
	_ = page.conn.Close(websocket.StatusNormalClosure, "")
	testkit.Eventually(t, "the page peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })

	if got := w.tools()["pg"]; got != "page" {
		t.Errorf("pg listed at %q after the page left, want page", got)
	}
	if tool := mcp.List(t)["echo"]; tool == nil {
		t.Error("MCP tools/list dropped the departed page's tool")
	}
	if a := w.call("gone", "pg", w.slow, "echo", `{"secret":"arg"}`); a.Refused != wire.NoPage || a.Budget != nil {
		t.Errorf("pg after the page left: %+v, want %s", a, wire.NoPage)
	}
	if res := mcp.Call(t, "echo", map[string]any{}); !res.IsError || !strings.HasPrefix(mcptest.Text(res), "no-page: ") {
		t.Errorf("MCP tools/call after the page left: %+v", res)
	}

	// A newer page is not sent the departed page's calls: before its
	// catalog they are refused no-page, and the first call it receives is
	// one for its own descriptor.
	next := w.pageWith(cookie)
	testkit.Eventually(t, "the newer page to connect", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 1 })
	if a := w.call("newer", "pg", w.slow, "echo", `{"secret":"arg"}`); a.Refused != wire.NoPage {
		t.Errorf("pg with a newer page that has not declared it: %+v, want %s", a, wire.NoPage)
	}
	next.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("pg2", w.slow)}))
	testkit.Eventually(t, "pg2 routed to the page", func() bool { return w.tools()["pg2"] == "page" })
	if _, listed := w.tools()["pg"]; listed {
		t.Error("pg, omitted by the newer page's catalog, is still listed")
	}
	if a := w.call("omitted", "pg", w.slow, "echo", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("pg after a catalog that omits it: %+v, want %s", a, wire.UnattributedCall)
	}
	res := w.callAsync("own", "pg2", w.slow, "echo", `{}`)
	if c := next.answerNext(`{"from":"page"}`); c.DescriptorID != "pg2" {
		t.Fatalf("the newer page received a call for %q", c.DescriptorID)
	}
	if a := res(); !a.OK {
		t.Errorf("pg2: %+v", a)
	}
	if n := w.metric("airlock_channel_calls_total", `outcome="no-page"`, `peer="page"`); n != 3 {
		t.Errorf("no-page counted %v, want 3", n)
	}

	_ = next.conn.Close(websocket.StatusNormalClosure, "")
	testkit.Eventually(t, "the newer page to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })
	if a := w.call("gone2", "pg2", w.slow, "echo", `{}`); a.Refused != wire.NoPage {
		t.Errorf("pg2 after its page left: %+v, want %s", a, wire.NoPage)
	}
	w.broker.Stop()
	w.startBroker()
	if _, listed := w.tools()["pg2"]; listed {
		t.Error("the page's catalog survived a broker restart")
	}
	if a := w.call("restarted", "pg2", w.slow, "echo", `{}`); a.Refused != wire.UnattributedCall {
		t.Errorf("pg2 after a restart: %+v, want %s", a, wire.UnattributedCall)
	}
}

// TestChannelLocalPluginOutranksRememberedPageEntry: a plugin dropped into
// the plugins folder after the page left, under a descriptorId the page
// declared, is listed and called as local, not refused no-page.
func TestChannelLocalPluginOutranksRememberedPageEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := newChanWorld(t, "AIRLOCK_PLUGINS="+dir)
	probe := wire.Bounds{TimeoutMs: 2000, MemoryMiB: 64, MaxOutputBytes: 1 << 16, AllowedHosts: []string{}, Roots: []string{}}
	page := w.pageWith(chanViewCookie(t, w, w.broker.URL()))
	page.send(wire.CatalogFrame([]wire.Descriptor{pageDesc("notes", probe)}))
	testkit.Eventually(t, "notes routed to the page", func() bool { return w.tools()["notes"] == "page" })
	_ = page.conn.Close(websocket.StatusNormalClosure, "")
	testkit.Eventually(t, "the page peer to be gone", func() bool { return w.metric("airlock_channel_peers", `peer="page"`) == 0 })
	if a := w.call("before", "notes", probe, "echo", `{}`); a.Refused != wire.NoPage {
		t.Fatalf("notes before the plugin: %+v, want %s", a, wire.NoPage)
	}

	must(t, plugins.WriteFolder(dir, fxManifestOf("notes", probe, "echo"), testkit.Fixture(t, "guest.wasm")))
	testkit.Eventually(t, "notes listed as local", func() bool { return w.tools()["notes"] == "local" })
	if a := w.call("after", "notes", probe, "echo", `{"to":"local"}`); !a.OK || string(a.Observed) != `{"to":"local"}` {
		t.Errorf("notes with the plugin admitted: %+v", a)
	}
}
