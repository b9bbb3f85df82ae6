package metrics

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/executors/wire"
)

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"INVALID_ORIGIN":            "invalid-origin",
		"PROTOCOL_VERSION_MISMATCH": "protocol-version-mismatch",
		"focusNode":                 "focus-node",
		"captureInspectRequest":     "capture-inspect-request",
		"host_to_views":             "host-to-views",
		"tools/call":                "tools-call",
		"notifications/initialized": "notifications-initialized",
		"exec-timeout":              "exec-timeout",
		"ok":                        "ok",
		Other:                       Other,
	} {
		if got := Kebab(in); got != want || !(InStyle(got) || got == Other) {
			t.Errorf("Kebab(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "OTHER", "focusNode", "host_to_views", "a--b", "-a", "tools/call", "é"} {
		if InStyle(bad) {
			t.Errorf("InStyle(%q)", bad)
		}
	}
}

// families gathers r into name → number of series.
func families(t *testing.T, r *Registry) map[string]int {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		out[mf.GetName()] = len(mf.GetMetric())
	}
	return out
}

// TestClosedSetsAreAtZeroFromTheStart: before any event, every series of
// a closed set this package owns is exported at 0.
func TestClosedSetsAreAtZeroFromTheStart(t *testing.T) {
	r := New()
	got := families(t, r)
	outcomes := len(wire.Rules) + 2
	relay := len(relayPairs())
	if relay < len(contract.Types()) { // every type but hello, some in two directions
		t.Errorf("only %d relay pairs for %d types", relay, len(contract.Types()))
	}
	for name, want := range map[string]int{
		"airlock_build_info":                 1,
		"airlock_tool_calls_total":           outcomes, // OTHER, OTHER
		"airlock_tool_call_duration_seconds": 1,
		"airlock_tool_timeouts_total":        1,
		"airlock_channel_calls_total":        3 * outcomes,
		"airlock_channel_timeouts_total":     2,
		"airlock_channel_inflight":           2,
		"airlock_channel_peers":              2,
		"airlock_ws_connections":             4,
		"airlock_sessions":                   2,
		"airlock_relay_host_busy_total":      2,
		"airlock_relay_refusals_total":       5,
		"airlock_relay_messages_total":       relay,
		"airlock_auth_refusals_total":        len(Endpoints) + 5 + 4,
		"airlock_mcp_sessions":               len(MCPTransports),
		"airlock_mcp_requests_total":         len(MCPMethods) * len(MCPOutcomes),
		"airlock_mcp_tool_collisions_total":  len(MCPCollisionOutcomes),
		"airlock_plugins_admitted":           1,
		"airlock_sessions_minted_total":      1,
		"airlock_relay_dropped_views_total":  1,
		"airlock_relay_dropped_hosts_total":  1,
		"airlock_connections_open":           1,
		"airlock_connections_refused_total":  1,
	} {
		if got[name] != want {
			t.Errorf("%s has %d series at start, want %d", name, got[name], want)
		}
	}
	if v := testutil.ToFloat64(r.RelayMessage("validateRequest", RelayViewToHost)); v != 0 {
		t.Errorf("validateRequest view-to-host = %v", v)
	}
	// The relay's hot path finds its pre-bound counters.
	r.RelayMessage("focusNode", RelayHostToViews).Inc()
	if v := testutil.ToFloat64(r.RelayMessages.WithLabelValues("focus-node", RelayHostToViews)); v != 1 {
		t.Errorf("focusNode not counted under focus-node: %v", v)
	}
	if v := testutil.ToFloat64(r.RelayMessage("focusNode", RelayViewToHost)); v != 0 {
		t.Error("a pair the contract does not route is not folded into OTHER")
	}
	r.MCPRequest("tools/call", "ok")
	r.MCPRequest("evil/method", "error")
	if testutil.ToFloat64(r.MCPRequests.WithLabelValues("tools-call", "ok")) != 1 ||
		testutil.ToFloat64(r.MCPRequests.WithLabelValues(Other, "error")) != 1 {
		t.Error("MCP methods not labelled in style")
	}
}

// TestEveryLabelValueIsInStyle gathers a registry with every collector
// touched and checks each label value of every airlock_ family: kebab-case,
// or OTHER, or an admitted name (descriptor, tool), or a build fact.
func TestEveryLabelValueIsInStyle(t *testing.T) {
	r := New()
	r.AuthRefused("ws", "INVALID_ORIGIN")
	r.RelayRefused("UNKNOWN_MESSAGE")
	r.ToolCalls.WithLabelValues("notes", "read_notes", "ok").Inc()
	bad := StyleViolations(t, r)
	for _, b := range bad {
		t.Error(b)
	}
	// The check can fail.
	r.RelayRefusals.WithLabelValues("INVALID_MESSAGE").Inc()
	if len(StyleViolations(t, r)) != 1 {
		t.Error("a SCREAMING_SNAKE value was not caught")
	}
}

// StyleViolations lists every label value of r outside the style.
func StyleViolations(t *testing.T, r *Registry) []string {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), Namespace+"_") {
			continue // the Go and process collectors are not ours
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !LabelInStyle(mf.GetName(), l.GetName(), l.GetValue()) {
					bad = append(bad, mf.GetName()+"{"+l.GetName()+"="+l.GetValue()+"}")
				}
			}
		}
	}
	return bad
}

func TestBuildInfo(t *testing.T) {
	b := ReadBuildInfo("")
	if b.Version != "dev" || b.GoVersion != runtime.Version() || b.Commit == "" || b.WazeroVersion == "" {
		t.Errorf("ReadBuildInfo: %+v", b)
	}
	if ReadBuildInfo("v1.2.3").Version != "v1.2.3" {
		t.Error("a stamped version is not kept")
	}
	r := New()
	r.SetBuildInfo(BuildInfo{Version: "v9", Commit: "abc", GoVersion: "go1", WazeroVersion: "v1"})
	if n := testutil.CollectAndCount(r.buildInfo); n != 1 {
		t.Fatalf("%d build_info series, want 1", n)
	}
	if v := testutil.ToFloat64(r.buildInfo.WithLabelValues("v9", "abc", "go1", "v1")); v != 1 {
		t.Errorf("build_info = %v", v)
	}
}
