package report

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/examples"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// svgTexts is every text an SVG draws, in order.
func svgTexts(t *testing.T, b []byte) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	var out []string
	in := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			in = x.Name.Local == "text"
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in && strings.TrimSpace(string(x)) != "" {
				out = append(out, strings.TrimSpace(string(x)))
			}
		}
	}
	return out
}

// TestSweepChart: the chart of a metric is SVG with its title and axis
// labels, one legend entry per series of the other axes, a log x axis
// for M over three decades, the noisy points marked, and the limit the
// phase expects drawn and named; written beside the results file, and
// embedded under its table.
func TestSweepChart(t *testing.T) {
	p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: gemm
    sweep: {m: [1, 16, 256, 2048], shape: [up, down]}
    repeat: 3
    expect: {tflops: "<= 500"}
    steps:
      - run: |
          true
`)
	ph := p.Phases[0]
	ps := doneSweep(ph, func(u *campaign.Unit) runner.Row {
		m := []float64{1, 16, 256, 2048}[u.Values[0]]
		v := m * 0.2
		if u.Point == 2 { // m=16, shape=up: noisy
			v *= float64(u.Repeat)
		}
		return runner.Row{Cols: []string{"m", "shape", "repeat", "tflops"}, Values: []any{m, "x", float64(u.Repeat), v}}
	})
	dir := t.TempDir()
	report := filepath.Join(dir, "bench.md")
	names, err := sweepCharts(report, ph, ps)
	if err != nil || names["tflops"] != "bench.gemm.tflops.svg" {
		t.Fatalf("charts = %v, %v", names, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, names["tflops"]))
	if err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, b)
	for _, want := range []string{"gemm: tflops by m", "m", "tflops", "shape=up", "shape=down", "noisy: repeats disagree", "expect <= 500", "1", "16", "256", "2048"} {
		if !slices.Contains(texts, want) {
			t.Errorf("the chart does not say %q; it says %q", want, texts)
		}
	}
	if !strings.Contains(string(b), `fill="#FFFFFF"`) && !strings.Contains(string(b), "fill:#FFFFFF") && !strings.Contains(strings.ToLower(string(b)), "ffffff") {
		t.Error("no white background")
	}
	if strings.Contains(string(b), "<script") {
		t.Error("a script in the chart")
	}
	if !strings.Contains(string(b), "'Times New Roman'") {
		t.Error("no fallback of the measured font's metrics: a browser without Liberation Serif runs the legend's lines together")
	}
	rp := results.PhaseOf(ph, &ps, ps.Ended)
	again, _ := sweepChart(ph, &rp, "tflops", nil)
	if string(again) != string(b) {
		t.Error("the same rows drew another chart: not deterministic")
	}
	// The first point alone (a log axis over one value) draws, never panics.
	first := ps
	first.Steps = []runner.StepState{ps.Steps[0]}
	if _, err := sweepCharts(report, ph, first); err != nil {
		t.Errorf("the chart of the first point: %v", err)
	}
	block := sweepTables(ph, ps, names)
	if !strings.Contains(block, "![tflops by m](bench.gemm.tflops.svg)") {
		t.Errorf("the chart is not embedded:\n%s", block)
	}
}

// BenchmarkSweepCharts1000: the charts of a 1,000-point sweep (10 series
// of 100 M values, one metric), drawn and written as a write does.
func BenchmarkSweepCharts1000(b *testing.B) {
	ms := make([]string, 100)
	for i := range ms {
		ms[i] = strconv.Itoa(i + 1)
	}
	p, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte("name: t\nphases:\n  - id: g\n    sweep: {m: ["+strings.Join(ms, ", ")+"], s: [a, b, c, d, e, f, g, h, i, j]}\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		b.Fatal(err)
	}
	ph := p.Phases[0]
	ps := doneSweep(ph, func(u *campaign.Unit) runner.Row {
		return runner.Row{Cols: []string{"tflops"}, Values: []any{float64(u.Values[0] * (1 + u.Values[1]))}}
	})
	report := filepath.Join(b.TempDir(), "r.md")
	b.ResetTimer()
	for b.Loop() {
		if _, err := sweepCharts(report, ph, ps); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDemoChartFromItsFirstRow: the demo's GEMM grid with only its first
// row in (a log axis over one point): the chart draws; a runner once
// died here of a panic inside the plotting library.
func TestDemoChartFromItsFirstRow(t *testing.T) {
	body := strings.NewReplacer("${DEMO_PORT}", "1", `"$DEMO_PORT"`, "1").Replace(string(examples.Demo))
	p := parsePlan(t, "/c/c.yaml", body)
	ps := runner.PhaseState{ID: "gemm", Status: runner.Running, Steps: []runner.StepState{{Index: 0, Status: runner.Done,
		Results: []runner.Row{{Cols: []string{"m", "shape", "repeat", "time_ms", "TFLOP/s"}, Values: []any{1.0, "gate_up", 1.0, 0.0112, 5.2}}}}}}
	names, err := sweepCharts(filepath.Join(t.TempDir(), "r.md"), p.Phase("gemm"), ps)
	if err != nil || len(names) != 2 {
		t.Errorf("charts of the first row: %v, %v", names, err)
	}
}

// TestParetoFront: with lower TPOT and higher throughput better, the
// point worse on both than another (c=8: slower and less) is off the
// front; the chart labels each point by its axis and is embedded.
func TestParetoFront(t *testing.T) {
	pts := []tradePoint{{10, 50, "1"}, {12, 95, "2"}, {20, 170, "4"}, {60, 160, "8"}, {20, 100, "4b"}}
	var got []string
	for _, p := range paretoFront(pts, true, true) {
		got = append(got, p.label)
	}
	if strings.Join(got, ",") != "1,2,4" {
		t.Errorf("front %v; want 1, 2, 4", got)
	}
	plan := parsePlan(t, "/c/c.yaml", `name: slo
phases:
  - id: decode
    sweep: {concurrency: [1, 2, 4, 8]}
    expect: {tpot_ms: "<= 100"}
    plot: {x: tpot_ms, y: tok_s, label: concurrency}
    steps:
      - run: |
          bench ${concurrency}
`)
	p := runner.PhaseState{ID: "decode", Title: "decode", Status: runner.Done, Attempt: 1}
	for i, v := range [][2]float64{{10, 50}, {12, 95}, {20, 170}, {60, 160}} {
		p.Steps = append(p.Steps, runner.StepState{Index: i, Status: runner.Done, Results: []runner.Row{{Cols: []string{"concurrency", "repeat", "tpot_ms", "tok_s"}, Values: []any{float64(i), 1.0, v[0], v[1]}}}})
	}
	path := filepath.Join(t.TempDir(), "slo.md")
	w := NewWriter(path, plan, testEnv(), nil, "")
	if err := w.Write(&runner.State{Name: "slo", Phases: []runner.PhaseState{p}}); err != nil {
		t.Fatal(err)
	}
	svg := readFileT(t, filepath.Join(filepath.Dir(path), "slo.decode.pareto.svg"))
	for _, want := range []string{"tok_s against tpot_ms", "Pareto front", ">8<", ">4<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if md := readFileT(t, path); !strings.Contains(md, "![tok_s against tpot_ms](slo.decode.pareto.svg)") {
		t.Errorf("the chart is not embedded:\n%s", md)
	}
	// Plotted against the concurrency asked for, a point is drawn where
	// its requests say its load was: c=16 that achieved 8 sits at 8.
	plan = parsePlan(t, "/c/c.yaml", `name: ach
phases:
  - id: decode
    sweep: {c: [4, 8, 16]}
    plot: {x: max_concurrency, y: tok_s, label: c}
    steps:
      - run: |
          bench ${c}
`)
	p = runner.PhaseState{ID: "decode", Title: "decode", Status: runner.Done, Attempt: 1}
	for i, v := range [][3]float64{{4, 4, 400}, {8, 7.9, 700}, {16, 8, 710}} {
		p.Steps = append(p.Steps, runner.StepState{Index: i, Status: runner.Done, Results: []runner.Row{{Cols: []string{"c", "repeat", "max_concurrency", runner.ColAchieved, "tok_s"}, Values: []any{v[0], 1.0, v[0], v[1], v[2]}}}})
	}
	path = filepath.Join(t.TempDir(), "ach.md")
	w = NewWriter(path, plan, testEnv(), nil, "")
	if err := w.Write(&runner.State{Name: "ach", Phases: []runner.PhaseState{p}}); err != nil {
		t.Fatal(err)
	}
	svg = readFileT(t, filepath.Join(filepath.Dir(path), "ach.decode.pareto.svg"))
	if !strings.Contains(svg, "achieved_concurrency (for max_concurrency requested)") {
		t.Errorf("the chart's x is not the achieved concurrency")
	}
	if _, vals := results.PointValues(plan.Phase("decode"), p.Steps); achievedFor("max_concurrency", vals) != runner.ColAchieved || achievedFor("tok_s", vals) != "tok_s" {
		t.Error("achievedFor: max_concurrency is drawn as achieved, tok_s as itself")
	}
}

// TestSweepCurvesAsAsked: plot: with x an axis chooses the charts: along
// m though shape is the first axis, only the metrics y: names, each line
// named by series:, and the linear x scale log_x: false asks for.
func TestSweepCurvesAsAsked(t *testing.T) {
	p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: gemm
    sweep: {shape: [up, down], m: [1, 16, 256, 2048]}
    plot: {x: m, y: tflops, series: shape, log_x: false}
    steps:
      - run: |
          true
`)
	ph := p.Phases[0]
	ps := doneSweep(ph, func(u *campaign.Unit) runner.Row {
		m := []float64{1, 16, 256, 2048}[u.Values[1]]
		return runner.Row{Cols: []string{"tflops", "time_ms"}, Values: []any{m * 0.2, 1 / m}}
	})
	dir := t.TempDir()
	names, err := sweepCharts(filepath.Join(dir, "bench.md"), ph, ps)
	if err != nil || len(names) != 1 || names["tflops"] == "" {
		t.Fatalf("charts = %v, %v; want tflops alone", names, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, names["tflops"]))
	texts := svgTexts(t, b)
	for _, want := range []string{"gemm: tflops by m", "shape=up", "shape=down", "1000", "2000"} {
		if !slices.Contains(texts, want) {
			t.Errorf("the chart does not say %q; it says %q", want, texts)
		}
	}
	if slices.Contains(texts, "10") || slices.Contains(texts, "100") {
		t.Errorf("log ticks on a linear axis: %q", texts)
	}
	if block := sweepTables(ph, ps, names); !strings.Contains(block, "![tflops by m](bench.gemm.tflops.svg)") {
		t.Errorf("the chart is not embedded as by m:\n%s", block)
	}
}

// TestACrowdedChartNamesTheBest: past eight lines a chart names the eight
// best at their last point (highest; lowest where the metric is better
// lower) in rank order and draws the rest in grey, said once.
func TestACrowdedChartNamesTheBest(t *testing.T) {
	for _, better := range []string{"higher", "lower"} {
		p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: g
    better: `+better+`
    sweep: {m: [1, 2], s: [s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11]}
    steps:
      - run: |
          true
`)
		ph := p.Phases[0]
		ps := doneSweep(ph, func(u *campaign.Unit) runner.Row {
			return runner.Row{Cols: []string{"v"}, Values: []any{float64(u.Values[1]*10 + u.Values[0])}} // s11 highest
		})
		rp := results.PhaseOf(ph, &ps, ps.Ended)
		svg, err := sweepChart(ph, &rp, "v", nil)
		if err != nil {
			t.Fatal(err)
		}
		text := string(svg)
		want, not := []string{"s=s11", "s=s4"}, []string{"s=s3<", "s=s0<"}
		if better == "lower" {
			want, not = []string{"s=s0", "s=s7"}, []string{"s=s8<", "s=s11<"}
		}
		for _, w := range append(want, "4 more in grey (named: the 8 "+map[string]string{"higher": "highest", "lower": "lowest"}[better]) {
			if !strings.Contains(text, w) {
				t.Errorf("better %s: the chart lacks %q", better, w)
			}
		}
		for _, n := range not {
			if strings.Contains(text, n) {
				t.Errorf("better %s: the chart names %q", better, n)
			}
		}
		if strings.Count(text, "more in grey") != 1 {
			t.Errorf("better %s: the grey lines said %d times", better, strings.Count(text, "more in grey"))
		}
	}
}

// doneSweep is the state of a sweep phase whose every unit is done, each
// with the one row row gives it.
func doneSweep(ph *campaign.Phase, row func(u *campaign.Unit) runner.Row) runner.PhaseState {
	ps := runner.PhaseState{ID: ph.ID, Title: ph.Label(), Status: runner.Done}
	for i, st := range ph.Steps {
		ps.Steps = append(ps.Steps, runner.StepState{Index: i, Status: runner.Done, Results: []runner.Row{row(st.Unit)}})
	}
	return ps
}

// twoSamples is a GPU history of two idle samples per device: a phase of
// two seconds.
type twoSamples struct{ at time.Time }

func (h twoSamples) Window(id gpu.DeviceID, from, to time.Time, max int) []gpu.Point {
	return []gpu.Point{{T: h.at, Util: 0, MemUsed: 1, Power: 80, Temp: 31}, {T: h.at.Add(time.Second), Util: 0, MemUsed: 1, Power: 81, Temp: 31}}
}

// TestChartsFitToPrint: ticks fall on the swept values (1, 4, 8, 16),
// numbers carry no needless decimals, the legend stands beside the
// plotting area (the canvas grows by it), and a short phase's GPU chart
// draws utilization 0 to 100 with its samples as points.
func TestChartsFitToPrint(t *testing.T) {
	p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: decode
    sweep: {concurrency: [1, 4, 8, 16], shape: [a, b]}
    repeat: 2
    steps:
      - run: |
          true
`)
	ph := p.Phases[0]
	ps := doneSweep(ph, func(u *campaign.Unit) runner.Row {
		c := []float64{1, 4, 8, 16}[u.Values[0]]
		return runner.Row{Cols: []string{"tok_s"}, Values: []any{c*1000 + float64(u.Repeat*40+u.Values[1]*300)}}
	})
	dir := t.TempDir()
	names, err := sweepCharts(filepath.Join(dir, "bench.md"), ph, ps)
	if err != nil || names["tok_s"] == "" {
		t.Fatalf("charts %v %v", names, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, names["tok_s"]))
	texts := svgTexts(t, b)
	for _, want := range []string{"1", "4", "8", "16"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no tick at the swept value %s: %q", want, texts)
		}
	}
	for _, s := range texts {
		if strings.HasSuffix(s, ".00") || strings.HasSuffix(s, ".0") || s == "3" || s == "9" || s == "15" {
			t.Errorf("a label %q: needless decimals or a tick off the swept values (%q)", s, texts)
		}
	}
	if w := svgWidth(t, b); w <= 7*72 {
		t.Errorf("the chart is %vpt wide: its legend is inside the 7-inch plot", w)
	}

	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	sums := []gpu.Summary{{Device: gpu.Device{Index: 0, Name: "NVIDIA H200"}}}
	svg, err := gpuChart("short", sums, twoSamples{at}, at, at.Add(2*time.Second), nil)
	if err != nil || svg == nil {
		t.Fatalf("gpu chart: %v", err)
	}
	gt := svgTexts(t, svg)
	if !slices.Contains(gt, "100") || slices.Contains(gt, "-1") {
		t.Errorf("utilization not drawn 0-100: %q", gt)
	}
}

// svgWidth is an SVG's width in points.
func svgWidth(t *testing.T, b []byte) float64 {
	t.Helper()
	m := regexp.MustCompile(`<svg[^>]*\swidth="([0-9.]+)pt"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no width in %.200s", b)
	}
	w, _ := strconv.ParseFloat(string(m[1]), 64)
	return w
}

// TestTradeWaysByName: a plot: whose y is a latency by its name is better
// lower on the chart, as the results model says it (the chart took any y
// as higher-is-better); an unnamed pair keeps lower x, higher y.
func TestTradeWaysByName(t *testing.T) {
	plan := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: a
    sweep: {c: [1, 2]}
    plot: {x: tok_s, y: p99_latency_ms, label: c}
    steps:
      - run: |
          true
  - id: b
    sweep: {c: [1, 2]}
    plot: {x: foo, y: bar, label: c}
    steps:
      - run: |
          true
`)
	if lowerX, higherY := tradeWays(plan.Phase("a")); lowerX || higherY {
		t.Errorf("x tok_s, y p99_latency_ms: lower x %v, higher y %v; want higher x, lower y", lowerX, higherY)
	}
	if lowerX, higherY := tradeWays(plan.Phase("b")); !lowerX || !higherY {
		t.Errorf("unnamed: lower x %v, higher y %v", lowerX, higherY)
	}
}

// TestChartDrawsTheLoadAchieved: a serving sweep whose rows asked for
// their concurrency as max_concurrency and say what they achieved draws
// each point where its load was (a server capped at 24 draws the 32 at
// 24), and says so on its axis; a sweep whose rows asked for another
// concurrency than the axis's, or say none achieved, draws the axis.
func TestChartDrawsTheLoadAchieved(t *testing.T) {
	p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: s
    sweep: {concurrency: [4, 8, 16, 32]}
    metrics: [mean_tpot_ms, achieved_concurrency]
    steps:
      - run: |
          true
`)
	ph := p.Phases[0]
	rows := func(asked func(c float64) float64, achieved bool) runner.PhaseState {
		return doneSweep(ph, func(u *campaign.Unit) runner.Row {
			c, _ := strconv.ParseFloat(ph.Sweep.Axes[0].Values[u.Values[0]].Name, 64)
			row := runner.Row{Cols: []string{"max_concurrency", "mean_tpot_ms"}, Values: []any{asked(c), 20.0}}
			if achieved {
				row.Cols, row.Values = append(row.Cols, runner.ColAchieved), append(row.Values, 0.99*min(c, 24))
			}
			return row
		})
	}
	ps := rows(func(c float64) float64 { return c }, true)
	_, vals := results.PointValues(ph, ps.Steps)
	got := achievedX(ph.Layout(), vals)
	if len(got) != 4 || math.Abs(got[3]-0.99*24) > 1e-9 || math.Abs(got[0]-0.99*4) > 1e-9 {
		t.Fatalf("achieved by point %v; want 3.96, 7.92, 15.84, 23.76", got)
	}
	rp := results.PhaseOf(ph, &ps, ps.Ended)
	svg, err := sweepChart(ph, &rp, "mean_tpot_ms", vals)
	if err != nil || !strings.Contains(string(svg), "achieved_concurrency (for concurrency requested)") {
		t.Errorf("the chart's x axis does not say it draws the load achieved (err %v)", err)
	}
	if !strings.Contains(string(svg), ">32 asked<") {
		t.Error("the point drawn at 23.76 does not say it asked for 32")
	}
	for name, ps := range map[string]runner.PhaseState{
		"asked another": rows(func(c float64) float64 { return 2 * c }, true),
		"none achieved": rows(func(c float64) float64 { return c }, false),
	} {
		_, vals := results.PointValues(ph, ps.Steps)
		if got := achievedX(ph.Layout(), vals); got != nil {
			t.Errorf("%s: drawn at %v; want the axis's values", name, got)
		}
	}
}
