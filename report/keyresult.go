package report

// The key result of a phase: what a person would quote from it, in the
// header's table. A sweep's is its first metric at its best point, the
// point named ("tflops 681 ± 10 at m=4096"); a phase with metrics: its
// first metric's latest value; else the latest value checked against an
// expectation, else the latest rate, else the latest number.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// keyOf is the key result, its metric and the step that gave it (-1:
// none). ph may be nil (a phase the plan no longer has).
// rp is the phase's results model, nil to have it made.
func keyOf(ph *campaign.Phase, p runner.PhaseState, rp *results.Phase) (text, metric string, step int) {
	if ph != nil && ph.Sweep != nil && rp == nil {
		m := results.PhaseOf(ph, &p, p.Ended)
		rp = &m
	}
	if ph != nil && ph.Sweep != nil && ph.Sweep.Search != nil {
		return searchKey(ph, rp), "", -1
	}
	if ph != nil && ph.Sweep != nil && len(ph.Sweep.Axes) > 0 {
		if text, metric, step = bestPoint(ph, p, rp); text != "" {
			return text, metric, step
		}
	}
	if ph != nil && len(ph.Metrics) > 0 {
		for _, m := range ph.Metrics {
			for _, name := range m.Names() {
				if text, step = latestOf(p, name); text != "" {
					return text, name, step
				}
			}
		}
	}
	for pass := 0; pass < 3; pass++ {
		for i := len(p.Steps) - 1; i >= 0; i-- {
			rows := p.Steps[i].Results
			for j := len(rows) - 1; j >= 0; j-- {
				if s, m := rowKey(&rows[j], pass); s != "" {
					return s, m, i
				}
			}
		}
	}
	return "", "", -1
}

// bestPoint is a sweep's key metric at its best point: the first of its
// metrics whose better way is known (said; else a rate by its name,
// higher, or a time, lower), the point whose mean is best that way. ""
// where no metric has a way.
func bestPoint(ph *campaign.Phase, p runner.PhaseState, rp *results.Phase) (text, metric string, step int) {
	metrics := rp.MetricNames()
	var dir campaign.Direction
	for _, m := range keyOrder(ph, metrics) {
		d := rp.Metrics[slices.Index(metrics, m)].Better
		if d == "" && campaign.RateByName(m) {
			d = campaign.Higher // a rate by its name (TFLOP/s, tok_s): what a sweep is after
		}
		if d != "" {
			metric, dir = m, d
			break
		}
	}
	if metric == "" {
		return "", "", -1
	}
	var best results.Stat
	var bestPt *results.Point
	for i := range rp.Points {
		pt := &rp.Points[i]
		s, ok := pt.Stat(metric)
		if !ok || s.N == 0 {
			continue
		}
		if bestPt == nil || dir == campaign.Higher && s.Mean > best.Mean || dir == campaign.Lower && s.Mean < best.Mean {
			best, bestPt = s, pt
		}
	}
	if bestPt == nil {
		return "", "", -1
	}
	all := ph.AllSteps()
	step = -1
	at := bestPt.Key
	for i := range min(len(all), len(p.Steps)) {
		if u := all[i].Unit; u != nil && ph.Sweep.Key(*u) == at && len(p.Steps[i].Results) > 0 {
			step = i
		}
	}
	value := FormatNumber(best.Mean)
	if best.N >= 2 {
		value = strings.TrimSuffix(statCell(results.Stat{N: best.N, Mean: best.Mean, Half: best.Half}, false), fmt.Sprintf(" (n=%d)", best.N))
	}
	return fmt.Sprintf("%s %s%s at %s", metric, value, unitOf(metric), at), metric, step
}

// keyOrder is the order a sweep's metrics are tried for its key result:
// as its metrics: lists them; where it names none, a column it expects
// something of first (what the person checks), then rates (TFLOP/s),
// then the rest as they came.
func keyOrder(ph *campaign.Phase, metrics []string) []string {
	if len(ph.Metrics) > 0 {
		return metrics
	}
	expected := map[string]bool{}
	for _, e := range append(append([]campaign.Expect{}, ph.Expect...), stepExpects(ph)...) {
		expected[e.Column] = true
	}
	rank := func(m string) int {
		switch {
		case expected[m]:
			return 0
		case campaign.RateByName(m):
			return 1
		}
		return 2
	}
	out := slices.Clone(metrics)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// latestOf is a metric's latest value, with its unit.
func latestOf(p runner.PhaseState, metric string) (string, int) {
	for i := len(p.Steps) - 1; i >= 0; i-- {
		rows := p.Steps[i].Results
		for j := len(rows) - 1; j >= 0; j-- {
			for k, c := range rows[j].Cols {
				if f, ok := rows[j].Values[k].(float64); ok && c == metric {
					return fmt.Sprintf("%s %s%s", metric, FormatNumber(f), unitOf(metric)), i
				}
			}
		}
	}
	return "", -1
}

// unitOf is a metric's unit as its name's end says it (" ms" of
// p99_tpot_ms, " tok/s" of output_token_throughput_tok_s); "" when it
// says none.
func unitOf(metric string) string {
	for _, u := range []struct{ end, unit string }{
		{"_tok_s", "tok/s"}, {"_req_s", "req/s"}, {"_ms", "ms"}, {"_us", "µs"}, {"_ns", "ns"},
		{"_gbps", "GB/s"}, {"_tflops", "TFLOP/s"}, {"_w", "W"}, {"_s", "s"},
	} {
		if strings.HasSuffix(strings.ToLower(metric), u.end) {
			return " " + u.unit
		}
	}
	return ""
}

func rowKey(last *runner.Row, pass int) (string, string) {
	switch pass {
	case 0: // the first checked column
		if len(last.Checks) > 0 {
			ch := last.Checks[0]
			mark := "✓"
			if !ch.Pass {
				mark = "✗"
			}
			return fmt.Sprintf("%s = %s %s", ch.Expect.Column, FormatNumber(ch.Value), mark), ch.Expect.Column
		}
	case 1:
		for i, c := range last.Cols {
			if f, ok := last.Values[i].(float64); ok && campaign.RateByName(c) {
				return fmt.Sprintf("%s = %s", c, FormatNumber(f)), c
			}
		}
	default:
		for i := len(last.Values) - 1; i >= 0; i-- {
			if f, ok := last.Values[i].(float64); ok {
				return fmt.Sprintf("%s = %s", last.Cols[i], FormatNumber(f)), last.Cols[i]
			}
		}
	}
	return "", ""
}
