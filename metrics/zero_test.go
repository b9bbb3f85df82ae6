package metrics

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
// a closed set this package owns is exported at 0; the /local sets wait
// for DeclareLocal.
func TestClosedSetsAreAtZeroFromTheStart(t *testing.T) {
	r := New()
	got := families(t, r)
	outcomes := len(wire.Rules) + 2
	for name, want := range map[string]int{
		"airlock_build_info":                 1,
		"airlock_tool_calls_total":           outcomes, // OTHER, OTHER
		"airlock_tool_call_duration_seconds": 1,
		"airlock_tool_timeouts_total":        1,
		"airlock_channel_calls_total":        3 * outcomes,
		"airlock_channel_timeouts_total":     2,
		"airlock_channel_inflight":           2,
		"airlock_channel_peers":              2,
		"airlock_ws_connections":             2, // channel page, machine
		"airlock_sessions":                   2,
		"airlock_relay_host_busy_total":      2,
		"airlock_relay_refusals_total":       0,
		"airlock_relay_messages_total":       0,
		"airlock_auth_refusals_total":        0,
		"airlock_mcp_sessions":               len(MCPTransports),
		"airlock_mcp_requests_total":         len(MCPMethods) * len(MCPOutcomes),
		"airlock_mcp_tool_collisions_total":  len(MCPCollisionOutcomes),
		"airlock_plugins_admitted":           1,
		"airlock_sessions_minted_total":      1,
		"airlock_relay_dropped_views_total":  1,
		"airlock_relay_dropped_hosts_total":  1,
		"airlock_connections_open":           1,
		"airlock_connections_refused_total":  1,
		"airlock_receipts_written_total":     1,
		"airlock_receipt_bytes_total":        1,
		"airlock_receipt_failures_total":     1,
	} {
		if got[name] != want {
			t.Errorf("%s has %d series at start, want %d", name, got[name], want)
		}
	}
	r.MCPRequest("tools/call", "ok")
	r.MCPRequest("evil/method", "error")
	if testutil.ToFloat64(r.MCPRequests.WithLabelValues("tools-call", "ok")) != 1 ||
		testutil.ToFloat64(r.MCPRequests.WithLabelValues(Other, "error")) != 1 {
		t.Error("MCP methods not labelled in style")
	}
}

// TestDeclareLocal: the /local sets the broker hands in are declared at
// 0 in the label style, and the relay's hot path finds its pre-bound
// counters.
func TestDeclareLocal(t *testing.T) {
	r := New()
	r.DeclareLocal(Local{
		Roles:         []string{"host", "view"},
		RelayRefusals: []string{"INVALID_MESSAGE", "UNKNOWN_MESSAGE"},
		AuthRefusals:  map[string][]string{"ws": {"INVALID_ORIGIN", "INVALID_CREDENTIALS"}, "v1": {"INVALID_ORIGIN"}},
		RelayPairs:    []RelayPair{{"focusNode", RelayHostToViews}, {"validateRequest", RelayViewToHost}, {"viewState", RelayBroker}},
	})
	want := map[string][]string{
		"airlock_ws_connections": {"endpoint=channel role=machine", "endpoint=channel role=page",
			"endpoint=ws role=host", "endpoint=ws role=view"},
		"airlock_relay_refusals_total": {"code=invalid-message", "code=unknown-message"},
		"airlock_auth_refusals_total": {"code=invalid-credentials endpoint=ws", "code=invalid-origin endpoint=v1",
			"code=invalid-origin endpoint=ws"},
		"airlock_relay_messages_total": {"direction=broker type=view-state", "direction=host-to-views type=focus-node",
			"direction=view-to-host type=validate-request"},
	}
	got := seriesAtZero(t, r)
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if bad := StyleViolations(t, r); len(bad) != 0 {
		t.Errorf("out of style: %q", bad)
	}
	r.RelayMessage("focusNode", RelayHostToViews).Inc()
	if v := testutil.ToFloat64(r.RelayMessages.WithLabelValues("focus-node", RelayHostToViews)); v != 1 {
		t.Errorf("focusNode not counted under focus-node: %v", v)
	}
	if r.RelayMessage("focusNode", RelayViewToHost) != r.RelayMessages.WithLabelValues(Other, RelayViewToHost) {
		t.Error("a pair outside RelayPairs is not folded into OTHER")
	}
	if got := families(t, r)["airlock_relay_messages_total"]; got != 4 {
		t.Errorf("%d relay series, want the 3 declared and OTHER", got)
	}
}

// seriesAtZero gathers r into name → the sorted label sets of its
// series, failing on a series that is not 0.
func seriesAtZero(t *testing.T, r *Registry) map[string][]string {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[mf.GetName()] = append(out[mf.GetName()], strings.Join(ls, " "))
			if v := m.GetCounter().GetValue() + m.GetGauge().GetValue(); v != 0 && mf.GetName() != "airlock_build_info" &&
				strings.HasPrefix(mf.GetName(), Namespace+"_") {
				t.Errorf("%s{%s} = %v", mf.GetName(), strings.Join(ls, " "), v)
			}
		}
		slices.Sort(out[mf.GetName()])
	}
	return out
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
