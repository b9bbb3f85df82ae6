package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestExpositionLints touches every collector once and runs the exposition
// through promlint, the linter behind `promtool check metrics`.
func TestExpositionLints(t *testing.T) {
	r := New()
	r.ToolCalls.WithLabelValues("notes", "read_notes", "ok").Inc()
	r.ToolCallDuration.WithLabelValues("notes", "read_notes").Observe(0.01)
	r.ToolTimeouts.WithLabelValues("notes", "read_notes").Inc()
	r.ToolFetchRequests.WithLabelValues("notes").Observe(1)
	r.PluginsAdmitted.Set(2)
	r.PluginAdmissionErr.WithLabelValues("hash-mismatch").Inc()
	r.Sessions.WithLabelValues("live").Set(1)
	r.SessionsMinted.Inc()
	r.WSConnections.WithLabelValues("ws", "view").Inc()
	r.RelayMessage("focusNode", RelayHostToViews).Inc()
	r.RelayRefused("INVALID_MESSAGE")
	r.RelayDropped.Inc()
	r.AuthRefused("channel", "bearer-refused")
	r.ConnectionsOpen.Set(3)
	r.ConnectionsRefused.Inc()
	r.ConnectionsEvicted.WithLabelValues("body").Inc()
	r.ChannelCalls.WithLabelValues("machine", "ok").Inc()
	r.ChannelTimeouts.WithLabelValues("page").Inc()
	r.ChannelInflight.WithLabelValues("machine").Set(0)
	r.ChannelPeers.WithLabelValues("machine").Set(1)
	r.ChannelFramesRejected.WithLabelValues("malformed").Inc()

	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	for _, name := range []string{
		"airlock_tool_calls_total", "airlock_tool_call_duration_seconds_bucket", "airlock_tool_timeouts_total",
		"airlock_tool_fetch_requests_used_bucket", "airlock_plugins_admitted", "airlock_plugin_admission_failures_total",
		"airlock_sessions", "airlock_sessions_minted_total", "airlock_ws_connections", "airlock_relay_messages_total",
		"airlock_relay_refusals_total", "airlock_relay_dropped_views_total", "airlock_auth_refusals_total",
		"airlock_channel_calls_total", "airlock_channel_timeouts_total", "airlock_channel_inflight",
		"airlock_channel_peers", "airlock_channel_frames_rejected_total", "airlock_connections_open",
		"airlock_connections_refused_total", "airlock_connections_evicted_total", "go_goroutines", "process_cpu_seconds_total",
	} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("exposition lacks %s", name)
		}
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func TestLabelsFoldIntoOther(t *testing.T) {
	if LabelIn("ok", "ok", "x") != "ok" || LabelIn("evil", "ok") != Other {
		t.Error("LabelIn")
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.SessionsMinted.Inc()
	w := httptest.NewRecorder()
	b.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(w.Body.String(), "airlock_sessions_minted_total 1") {
		t.Error("registries share state")
	}
}

// TestHelpNamesTheLabelValues: a help text that lists a family's label
// values lists them as the series spell them, every one of them, so a
// reader of the exposition can match help to series.
func TestHelpNamesTheLabelValues(t *testing.T) {
	r := New()
	lists := map[string]string{ // family: the label whose values its help lists
		"airlock_relay_host_busy_total": "outcome",
		"airlock_mcp_sessions":          "transport",
		"airlock_mcp_requests_total":    "outcome",
	}
	families, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		label, ok := lists[f.GetName()]
		if !ok {
			continue
		}
		seen++
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && !strings.Contains(f.GetHelp(), l.GetValue()) {
					t.Errorf("%s: help %q does not name %s %q", f.GetName(), f.GetHelp(), label, l.GetValue())
				}
			}
		}
	}
	if seen != len(lists) {
		t.Fatalf("found %d of the %d families", seen, len(lists))
	}
}
