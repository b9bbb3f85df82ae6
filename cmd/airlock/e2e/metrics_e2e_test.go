package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins"
)

// families parses the broker's exposition.
func families(t *testing.T, p *proc) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, p)))
	if err != nil {
		t.Fatalf("exposition: %v", err)
	}
	return mfs
}

// descriptorSeries counts the series labelled descriptor=id.
func descriptorSeries(mfs map[string]*dto.MetricFamily, id string) int {
	return metrics.SeriesLabelled(slices.Collect(maps.Values(mfs)), "descriptor", id)
}

// TestMetricsAnSRECanUse scrapes the real broker right after it listens:
// build info, every closed label set at zero, the admitted plugin's series
// and every label value in the one style. Then the plugin is removed and
// its series must go. (The dashboard's queries are checked by the
// metrics/grafana module's own test.)
func TestMetricsAnSRECanUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096}
	must(t, plugins.WriteFolder(dir, fxManifestOf("fx", b, "echo", "loop"), testkit.Fixture(t, "guest.wasm")))
	p := startServe(t, procOptions{Args: []string{"--plugins", dir, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})

	// Before any event.
	for _, series := range []string{
		`airlock_build_info{commit="COMMIT",goversion="` + runtime.Version() + `",version="dev",wazero_version="v1.12.0"}`,
		`airlock_tool_calls_total{descriptor="fx",outcome="ok",tool="echo"}`,
		`airlock_tool_calls_total{descriptor="fx",outcome="exec-timeout",tool="loop"}`,
		`airlock_tool_calls_total{descriptor="fx",outcome="unknown-tool",tool="OTHER"}`,
		`airlock_tool_calls_total{descriptor="OTHER",outcome="unattributed-call",tool="OTHER"}`,
		`airlock_tool_timeouts_total{descriptor="fx",tool="loop"}`,
		`airlock_tool_call_duration_seconds_count{descriptor="fx",tool="echo"}`,
		`airlock_tool_fetch_requests_used_count{descriptor="fx"}`,
		`airlock_plugin_admission_failures_total{reason="hash-mismatch"}`,
		`airlock_plugin_admission_failures_total{reason="signer-not-trusted"}`,
		`airlock_channel_calls_total{outcome="machine-unreachable",peer="machine"}`,
		`airlock_channel_timeouts_total{peer="page"}`,
		`airlock_channel_peers{peer="machine"}`,
		`airlock_channel_frames_rejected_total{reason="budget-mismatch"}`,
		`airlock_auth_refusals_total{code="bearer-refused",endpoint="channel"}`,
		`airlock_auth_refusals_total{code="invalid-credentials",endpoint="v1"}`,
		`airlock_ws_connections{endpoint="ws",role="view"}`,
		`airlock_sessions{state="live"}`,
		`airlock_relay_messages_total{direction="view-to-host",type="validate-request"}`,
		`airlock_relay_refusals_total{code="invalid-message"}`,
		`airlock_relay_host_busy_total{outcome="join-refused"}`,
		`airlock_connections_evicted_total{phase="idle"}`,
		`airlock_mcp_requests_total{method="tools-call",outcome="ok"}`,
		`airlock_mcp_sessions{transport="http"}`,
	} {
		want := 0.0
		if strings.HasPrefix(series, "airlock_build_info") {
			want, series = 1, strings.Replace(series, "COMMIT", buildCommit(t, p), 1)
		}
		if v := p.metric(t, series); v != want {
			t.Errorf("%s = %v at start, want %v", series, v, want)
		}
	}

	mfs := families(t, p)
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "airlock_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !metrics.LabelInStyle(name, l.GetName(), l.GetValue()) {
					t.Errorf("%s{%s=%q} is not in the label style", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	// Retired: every series of fx is deleted.
	if n := descriptorSeries(mfs, "fx"); n == 0 {
		t.Fatal("fx has no series while admitted")
	}
	must(t, os.RemoveAll(filepath.Join(dir, "fx")))
	p.waitStderr("plugin retired")
	testkit.Eventually(t, "fx's series to be deleted", func() bool { return descriptorSeries(families(t, p), "fx") == 0 })
}

// buildCommit is the commit label the broker reports; the test binary
// cannot know it, so it checks its shape instead.
func buildCommit(t *testing.T, p *proc) string {
	t.Helper()
	for _, m := range families(t, p)["airlock_build_info"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "commit" {
				c := strings.TrimSuffix(l.GetValue(), "-dirty")
				if c != metrics.Unknown && (len(c) != 40 || strings.Trim(c, "0123456789abcdef") != "") {
					t.Errorf("commit label %q is neither a revision nor unknown", l.GetValue())
				}
				return l.GetValue()
			}
		}
	}
	t.Fatal("no airlock_build_info")
	return ""
}
