package broker

import (
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/metrics"
)

// TestLocalLabelsAtZero: the /local sets the broker hands the registry
// declare, before any event, ws connections by role, every code an error
// frame can carry, each endpoint's refusals and every pair the relay
// counts, all in the label style.
func TestLocalLabelsAtZero(t *testing.T) {
	l := localLabels()
	if len(l.RelayPairs) < len(contract.Types()) { // every type but hello, some in two directions
		t.Errorf("only %d relay pairs for %d types", len(l.RelayPairs), len(contract.Types()))
	}
	r := metrics.New()
	r.DeclareLocal(l)
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		got[mf.GetName()] = len(mf.GetMetric())
		if !strings.HasPrefix(mf.GetName(), metrics.Namespace+"_") {
			continue // the Go and process collectors are not ours
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if !metrics.LabelInStyle(mf.GetName(), lp.GetName(), lp.GetValue()) {
					t.Errorf("%s{%s=%q} is not in the label style", mf.GetName(), lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	for name, want := range map[string]int{
		"airlock_ws_connections":       4, // ws host, view; channel page, machine
		"airlock_relay_refusals_total": 5,
		"airlock_relay_messages_total": len(l.RelayPairs),
		"airlock_auth_refusals_total":  len(metrics.Endpoints) + 5 + 4,
	} {
		if got[name] != want {
			t.Errorf("%s has %d series at start, want %d", name, got[name], want)
		}
	}
	if r.RelayMessage("validateRequest", metrics.RelayViewToHost) == r.RelayMessages.WithLabelValues(metrics.Other, metrics.RelayViewToHost) {
		t.Error("validateRequest view-to-host is not pre-bound")
	}
}
