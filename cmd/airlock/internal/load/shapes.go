package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/airlock/airlock/broker/localclient"
)

// Shape is one relay workload: views per session and each host's rate.
type Shape struct {
	Views int `json:"views"`
	Rate  int `json:"ratePerSession"`
}

// StandardShapes are the relay rows of the performance targets: one view
// with the host at 10,000 messages/s, 100 at 1,000, 1,000 at 50.
const StandardShapes = "1x10000,100x1000,1000x50"

// errShapes refuses a --shapes list that does not parse.
var errShapes = errors.New("load: shapes are VIEWSxRATE[,VIEWSxRATE...], e.g. " + StandardShapes)

// ParseShapes parses "VIEWSxRATE,..." (views at least 1, rate at least 1
// and at most MaxRate).
func ParseShapes(s string) ([]Shape, error) {
	var out []Shape
	for part := range strings.SplitSeq(s, ",") {
		v, r, ok := strings.Cut(strings.TrimSpace(part), "x")
		views, err1 := strconv.Atoi(v)
		rate, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil || views < 1 || rate < 1 || rate > MaxRate {
			return nil, fmt.Errorf("%w: %q", errShapes, part)
		}
		out = append(out, Shape{views, rate})
	}
	return out, nil
}

// ShapesReport is one run of several shapes, each a whole relay run
// (its own topology, warmup and turns with the forwarder).
type ShapesReport struct {
	Command string         `json:"command"`
	Broker  string         `json:"broker"`
	Runs    []*RelayReport `json:"runs"`
}

// RelayShapes runs Relay once per shape with o's other options, one
// after the other; a ctx that ends stops after the shape it cut short.
func RelayShapes(ctx context.Context, client *localclient.Client, origin string, o RelayOptions, shapes []Shape) (*ShapesReport, error) {
	rep := &ShapesReport{Command: "relay", Broker: client.Base}
	for _, sh := range shapes {
		so := o
		so.Views, so.Rate = sh.Views, sh.Rate
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "shape %d×%d views, each host at %d msg/s\n", o.Sessions, sh.Views, sh.Rate)
		}
		r, err := Relay(ctx, client, origin, so)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	return rep, nil
}

// Print is one table: a row per shape, Airlock beside the forwarder and
// their ratios.
func (r *ShapesReport) Print(w io.Writer) {
	if len(r.Runs) == 0 {
		return
	}
	r.Runs[0].printHeader(w, fmt.Sprintf("relay on %s: %d-byte focusNode frames, window %d", r.Broker, r.Runs[0].FrameBytes, RateWindow),
		r.Runs[0].Baseline != nil)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sessions×views\tmsg/s per host\tsent/s airlock\tbaseline\tairlock p50\tp99\tbaseline p50\tp99\tratio p50\tp99\tdropped\t")
	for _, run := range r.Runs {
		a, b := &run.Airlock, run.Baseline
		row := fmt.Sprintf("%d×%d\t%d\t%s\t%s\t%s\t%s\t", run.Sessions, run.Views, run.Rate, perHost(a, run), perHost(b, run),
			fmtMs(a.LatencyMs.P50), fmtMs(a.LatencyMs.P99))
		if b != nil {
			row += fmt.Sprintf("%s\t%s\t", fmtMs(b.LatencyMs.P50), fmtMs(b.LatencyMs.P99))
		} else {
			row += "-\t-\t"
		}
		if run.Ratios != nil {
			row += fmt.Sprintf("%.2f×\t%.2f×\t", run.Ratios.P50, run.Ratios.P99)
		} else {
			row += "-\t-\t"
		}
		dropped := a.DroppedViews
		if b != nil {
			dropped += b.DroppedViews
		}
		fmt.Fprintf(tw, "%s%d\t\n", row, dropped)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if b := r.Runs[0].Baseline; b != nil {
		fmt.Fprintf(w, "baseline: %s; sent/s: host messages a second achieved, per host\n", b.Label)
	}
	if r.Runs[len(r.Runs)-1].Interrupted {
		fmt.Fprintln(w, "interrupted: the last shape covers the time measured before Ctrl-C")
	}
	for _, run := range r.Runs {
		for name, f := range run.Sides() {
			if f.DroppedViews > 0 || f.SendErrors > 0 || f.Refusals > 0 {
				fmt.Fprintf(w, "%d×%d %s: dropped views by close %v, refusals %d, %d hosts failed to send (first: %s)\n",
					run.Sessions, run.Views, name, f.Closes, f.Refusals, f.SendErrors, f.FirstError)
			}
		}
	}
}

// perHost is the messages a second one host sent in measured turns.
func perHost(f *RelayFigures, run *RelayReport) string {
	if f == nil || f.Seconds <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(f.MessagesSent)/f.Seconds/float64(run.Sessions))
}
