package metrics

import dto "github.com/prometheus/client_model/go"

// SeriesLabelled counts the series among mfs that carry label name=value:
// tests use it to see a descriptor's series appear at admission and go at
// retirement, from a Gatherer or from a parsed exposition alike.
func SeriesLabelled(mfs []*dto.MetricFamily, name, value string) int {
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == name && l.GetValue() == value {
					n++
				}
			}
		}
	}
	return n
}
