package grafana_test

import (
	"bytes"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/airlock/airlock/broker"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/metrics/grafana"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// exported is every series name the broker's registry exports, built in
// process as the broker builds it (metrics.New declares every series it
// knows at zero; every collector is registered there): each
// gathered family, a histogram as its _bucket, _sum and _count, a summary
// as itself, _sum and _count. It fails if a registered family is not
// gathered, so no family escapes the comparison.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	r := metrics.New()
	// The closed sets a Registry's owners declare (the plugin catalog,
	// the channel, the connection limiter, the router), one child each.
	r.PluginAdmissionErr.WithLabelValues("hash-mismatch")
	r.ChannelFramesRejected.WithLabelValues("unknown-call")
	r.ConnectionsEvicted.WithLabelValues("idle")
	r.ToolFetchRequests.WithLabelValues("notes")
	broker.DeclareLocal(r) // the /local sets, from the contract as the broker declares them

	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[n+"_bucket"], out[n+"_sum"], out[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[n], out[n+"_sum"], out[n+"_count"] = true, true, true
		default:
			out[n] = true
		}
	}
	// Every registered family must have been gathered.
	descs := make(chan *prometheus.Desc, 256)
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if c, ok := v.Field(i).Interface().(prometheus.Collector); ok {
			c.Describe(descs)
		}
	}
	close(descs)
	for d := range descs {
		s := d.String()
		name := s[strings.Index(s, `fqName: "`)+9:]
		name = name[:strings.Index(name, `"`)]
		if !out[name] && !out[name+"_count"] {
			t.Errorf("%s is registered but has no series to compare with", name)
		}
	}
	return out
}

func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	exp := exported(t)
	bad, err := grafana.Unknown(grafana.Dashboard, exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	// And every airlock_ family has a view.
	qs, err := grafana.Queries(grafana.Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, q := range qs {
		names, _ := grafana.Metrics(q.Expr)
		for _, n := range names {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suffix); ok && exp[base+"_bucket"] {
					n = base + "_bucket"
				}
			}
			used[n] = true
		}
	}
	var missing []string
	for n := range exp {
		if strings.HasPrefix(n, "airlock_") && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") && !used[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no panel shows %v", missing)
	}
}

// TestUnknownMetricFails: the check refuses a query naming a metric the
// broker does not export, a misspelt histogram suffix, and a query that
// does not parse.
func TestUnknownMetricFails(t *testing.T) {
	exp := exported(t)
	dash := []byte(`{"panels":[{"type":"row","panels":[{"title":"inner","targets":[
	  {"refId":"A","expr":"sum(rate(airlock_tool_calls_total{job=~\"$job\"}[$__rate_interval]))"},
	  {"refId":"B","expr":"rate(airlock_calls_made_total[5m])"},
	  {"refId":"C","expr":"histogram_quantile(0.9, rate(airlock_tool_call_duration_seconds_buckets[5m]))"},
	  {"refId":"D","expr":"sum(rate(airlock_tool_calls_total[5m])"}]}]}],
	  "templating":{"list":[{"name":"job","type":"query","query":{"query":"label_values(airlock_bild_info, job)"}}]}}`)
	bad, err := grafana.Unknown(dash, exp)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"inner B: airlock_calls_made_total", "inner C: airlock_tool_call_duration_seconds_buckets", "inner D: ",
		"variable job: airlock_bild_info"}
	if len(bad) != len(want) {
		t.Fatalf("got %d problems, want %d: %q", len(bad), len(want), bad)
	}
	for i, w := range want {
		if !strings.HasPrefix(bad[i], w) {
			t.Errorf("problem %d: %q, want it to start %q", i, bad[i], w)
		}
	}
}

// TestMisspeltDashboardFails: the real dashboard with one family
// misspelt is refused at every query that names it.
func TestMisspeltDashboardFails(t *testing.T) {
	const name, misspelt = "airlock_tool_calls_total", "airlock_tool_call_total"
	if !bytes.Contains(grafana.Dashboard, []byte(name)) {
		t.Fatalf("the dashboard does not name %s", name)
	}
	bad, err := grafana.Unknown(bytes.ReplaceAll(grafana.Dashboard, []byte(name), []byte(misspelt)), exported(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) == 0 {
		t.Fatal("a misspelt family was accepted")
	}
	for _, b := range bad {
		if !strings.HasSuffix(b, misspelt+" is not exported") {
			t.Errorf("unexpected problem %q", b)
		}
	}
}

func TestMetricsReadsSelectorsNotFunctionsOrLabels(t *testing.T) {
	got, err := grafana.Metrics(`histogram_quantile(0.99, sum by (le, descriptor) (rate(airlock_tool_call_duration_seconds_bucket{instance=~"${instance}"}[$__rate_interval]))) / on() group_left max({__name__="airlock_build_info"} offset 5m)`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "airlock_build_info airlock_tool_call_duration_seconds_bucket" {
		t.Errorf("Metrics = %v", got)
	}
	if _, err := grafana.Metrics(`{__name__=~"airlock_.+"}`); err == nil {
		t.Error("a selector without a metric name was accepted")
	}
}
