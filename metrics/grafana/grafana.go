// Package grafana holds the broker's Grafana dashboard (airlock.json) and
// reads the metric names its queries use, so a test can hold every query
// to the metrics the broker exports. It is a module of its own, which the
// broker's module does not require, so Prometheus's PromQL parser and its
// module graph stay out of the broker's (metrics/RATIONALE.md, "Why is
// the dashboard check a module of its own?").
package grafana

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Dashboard is airlock.json, the file an operator imports into Grafana.
//
//go:embed airlock.json
var Dashboard []byte

// Query is one PromQL query of a dashboard and where it is.
type Query struct {
	Where string // the panel title and refId, or the template variable
	Expr  string
}

// Queries lists every query of a dashboard: each panel target's expr
// (rows' nested panels included) and each query variable, label_values(…)
// reduced to its selector.
func Queries(dashboard []byte) ([]Query, error) {
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("grafana: %w", err)
	}
	var out []Query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, Query{Where: p.Title + " " + t.RefID, Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil { // older dashboards: a plain string
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("grafana: variable %s: %w", v.Name, err)
			}
		}
		expr, err := variableSelector(q.Query)
		if err != nil {
			return nil, fmt.Errorf("grafana: variable %s: %w", v.Name, err)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: expr})
	}
	return out, nil
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// labelValues is Grafana's label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// variableSelector is the PromQL part of a variable query.
func variableSelector(q string) (string, error) {
	if m := labelValues.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	if strings.HasPrefix(strings.TrimSpace(q), "query_result(") {
		return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(q), "query_result("), ")"), nil
	}
	return "", fmt.Errorf("not a label_values or query_result query: %q", q)
}

// Grafana's variables, replaced before parsing: a range variable by a
// duration, any other by a word (they appear only in matcher values).
var (
	rangeVar = regexp.MustCompile(`\[\$\{?__(rate_interval|interval|range)\}?\]`)
	otherVar = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?`)
)

// Metrics parses expr as PromQL (Grafana's variables substituted) and
// returns the metric names its selectors name, sorted. A selector without
// a literal name (only __name__ regexps) is an error: the test could not
// hold it to anything.
func Metrics(expr string) ([]string, error) {
	e := rangeVar.ReplaceAllString(expr, "[5m]")
	e = otherVar.ReplaceAllString(e, "x")
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(e)
	if err != nil {
		return nil, fmt.Errorf("grafana: %q: %w", expr, err)
	}
	seen := map[string]bool{}
	var bad error
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" && m.Type.String() == "=" {
				name = m.Value
			}
		}
		if name == "" {
			bad = fmt.Errorf("grafana: %q: a selector names no metric", expr)
			return nil
		}
		seen[name] = true
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Unknown lists, one line each, every query of dashboard that names a
// metric outside exported (or cannot be parsed).
func Unknown(dashboard []byte, exported map[string]bool) ([]string, error) {
	qs, err := Queries(dashboard)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("grafana: the dashboard has no queries")
	}
	var out []string
	for _, q := range qs {
		names, err := Metrics(q.Expr)
		if err != nil {
			out = append(out, q.Where+": "+err.Error())
			continue
		}
		for _, n := range names {
			if !exported[n] {
				out = append(out, fmt.Sprintf("%s: %s is not exported", q.Where, n))
			}
		}
	}
	return out, nil
}
