package compare

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

func statOfT(xs ...float64) Stat { return StatOf(xs) }

// TestWelchHandComputed holds the p-value against cases worked by hand:
// Student's t CDF in closed form for 2 and 4 degrees of freedom, and
// Simpson's rule over its density for Welch's fractional ones.
func TestWelchHandComputed(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b Stat
		want float64
	}{
		// n = 3 each, sd 2 each: t = 5/sqrt(8/3), df = 4;
		// F(t) = 1/2 + 3/8 · t/sqrt(1+t²/4) · (1 − t²/(12(1+t²/4))).
		{"equal variances, df 4", statOfT(10, 12, 14), statOfT(15, 17, 19), 0.03759011151114655},
		// n = 2 each: t = 3/sqrt(2), df = 2; F(t) = 1/2 + t/(2 sqrt(2+t²)).
		{"two runs each, df 2", statOfT(10, 12), statOfT(13, 15), 2 * (0.5 - 3/math.Sqrt(2)/(2*math.Sqrt(6.5)))},
		// Unequal variances and sizes: t = 2.2514, df = 5.5208.
		{"Welch's df", statOfT(1, 2, 3, 4), statOfT(2, 4, 6, 8, 10), 0.06913359320381098},
		{"no spread, same", statOfT(5, 5), statOfT(5, 5, 5), 1},
		{"no spread, differ", statOfT(5, 5), statOfT(6, 6), 0},
	} {
		if got := Welch(c.a, c.b); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: p = %.9f, want %.9f", c.name, got, c.want)
		}
	}
}

func rec(name, state string, phases []record.Phase, rows ...record.Row) *record.Record {
	return &record.Record{Kind: record.KindName, Schema: record.Schema, Campaign: record.Campaign{Name: name, State: state, Written: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)},
		Phases: phases, Rows: rows}
}

func row(phase, point string, vals map[string]any, stamp ...string) record.Row {
	return record.Row{Phase: phase, Point: point, Values: vals, Stamp: stamp}
}

func lineOf(t *testing.T, r Result, phase, point, metric string) Line {
	t.Helper()
	for _, l := range r.Lines {
		if l.Phase == phase && l.Point == point && l.Metric == metric {
			return l
		}
	}
	t.Fatalf("no line for %s %s %s in %+v", phase, point, metric, r.Lines)
	return Line{}
}

// TestVerdicts: Welch where both sides repeat, the tolerance where they
// do not; the way that is better from expect: or better:, "changed"
// where none is known; a stamped row flagged; phases, points and metrics
// on one side listed; renames; a baseline still running said.
func TestVerdicts(t *testing.T) {
	phases := []record.Phase{
		{ID: "gemm", Better: map[string]campaign.Direction{"tflops": "higher"}},
		{ID: "decode", Better: map[string]campaign.Direction{"tpot_ms": "lower", "*": "higher"}},
		{ID: "old-only"},
	}
	old := rec("bench0", "running", phases,
		row("gemm", "m=1", map[string]any{"tflops": 10.0}), row("gemm", "m=1", map[string]any{"tflops": 12.0}), row("gemm", "m=1", map[string]any{"tflops": 14.0}),
		row("gemm", "m=64", map[string]any{"tflops": 600.0}), row("gemm", "m=64", map[string]any{"tflops": 601.0}),
		row("gemm", "m=256", map[string]any{"tflops": 900.0}),
		row("decode", "", map[string]any{"tok_s": 55.0, "tpot_ms": 20.0, "ttft": 100.0, "output_tok_s": 900.0, "label": "k2"}),
		row("old-only", "", map[string]any{"x": 1.0}),
	)
	newPhases := append([]record.Phase(nil), phases[:2]...)
	newPhases = append(newPhases, record.Phase{ID: "new-only"})
	new := rec("bench1", "finished", newPhases,
		row("gemm", "m=1", map[string]any{"tflops": 15.0}), row("gemm", "m=1", map[string]any{"tflops": 17.0}), row("gemm", "m=1", map[string]any{"tflops": 19.0}),
		row("gemm", "m=64", map[string]any{"tflops": 601.0}), row("gemm", "m=64", map[string]any{"tflops": 599.0}, "GPU 3 throttled (SW power cap)"),
		row("gemm", "m=8", map[string]any{"tflops": 80.0}),
		row("decode", "", map[string]any{"tok_s": 55.5, "tpot_ms": 23.0, "ttft": 90.0, "out_tok_s": 880.0}),
		row("new-only", "", map[string]any{"y": 1.0}),
	)
	r := Compare(old, new, Options{Tolerance: 0.02, Rename: map[string]string{"output_tok_s": "out_tok_s"}})

	for _, c := range []struct {
		phase, point, metric string
		want                 Verdict
	}{
		{"gemm", "m=1", "tflops", Better},  // Welch p = 0.038 < 0.05, higher is better
		{"gemm", "m=64", "tflops", Noise},  // Welch, no difference to speak of
		{"decode", "", "tok_s", Same},      // +0.9%, within 2%
		{"decode", "", "tpot_ms", Worse},   // +15%, lower is better
		{"decode", "", "ttft", Worse},      // -10%: better: higher covers what expect: does not name
		{"decode", "", "out_tok_s", Worse}, // renamed from output_tok_s; -2.2% is beyond 2%
	} {
		l := lineOf(t, r, c.phase, c.point, c.metric)
		if l.Verdict != c.want {
			t.Errorf("%s %s %s: %s (%s), want %s", c.phase, c.point, c.metric, l.Verdict, l.Basis, c.want)
		}
	}
	if l := lineOf(t, r, "gemm", "m=1", "tflops"); !strings.Contains(l.Basis, "Welch") || math.Abs(l.P-0.0376) > 1e-3 {
		t.Errorf("gemm m=1: basis %q p %v", l.Basis, l.P)
	}
	if l := lineOf(t, r, "gemm", "m=64", "tflops"); len(l.Stamped) != 1 || l.Stamped[0] != "new: GPU 3 throttled (SW power cap)" {
		t.Errorf("gemm m=64 stamped %q", l.Stamped)
	}
	missing := strings.Join(r.Missing, "\n")
	for _, want := range []string{
		"phase old-only: only in bench0", "phase new-only: only in bench1",
		"gemm m=8 tflops: only in bench1", "gemm m=256 tflops: only in bench0",
	} {
		if !strings.Contains(missing, want) {
			t.Errorf("missing lacks %q:\n%s", want, missing)
		}
	}
	if strings.Contains(missing, "label") {
		t.Errorf("a text value is not a metric: %s", missing)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "bench0 was still running when its record was written") || !strings.Contains(notes, "output_tok_s → out_tok_s") {
		t.Errorf("notes: %s", notes)
	}
	md := r.Markdown(0)
	if !strings.Contains(md, "| gemm | m=64 | tflops |") || !strings.Contains(md, "| within noise ⚠1 |") || !strings.Contains(md, "- ⚠1 new: GPU 3 throttled (SW power cap)") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestNoDirectionIsChanged: without expect: or better:, a change beyond
// noise is "changed", never better or worse.
func TestNoDirectionIsChanged(t *testing.T) {
	ph := []record.Phase{{ID: "p"}}
	r := Compare(rec("a", "finished", ph, row("p", "", map[string]any{"x": 10.0})), rec("b", "finished", ph, row("p", "", map[string]any{"x": 12.0})), Options{Tolerance: 0.02})
	if l := lineOf(t, r, "p", "", "x"); l.Verdict != Changed {
		t.Errorf("verdict %s, want changed", l.Verdict)
	}
}

// TestDirectionByName: with no expect: or better:, a rate (tflops) is
// better higher and a time (_ms) better lower by its name, and the words
// say that basis; a name that says neither is still only "changed".
func TestDirectionByName(t *testing.T) {
	ph := []record.Phase{{ID: "gemm"}}
	old := rec("a", "finished", ph, row("gemm", "", map[string]any{"tflops": 386.4, "time_ms": 10.0, "x": 10.0}))
	now := rec("b", "finished", ph, row("gemm", "", map[string]any{"tflops": 409.6, "time_ms": 9.4, "x": 12.0}))
	r := Compare(old, now, Options{Tolerance: 0.02})
	for _, c := range []struct {
		metric string
		want   Verdict
		words  string
	}{
		{"tflops", Better, "better (higher is better, by its name), beyond the tolerance"},
		{"time_ms", Better, "better (lower is better, by its name), beyond the tolerance"},
		{"x", Changed, "beyond the tolerance"},
	} {
		l := lineOf(t, r, "gemm", "", c.metric)
		if l.Verdict != c.want || l.meaning() != c.words {
			t.Errorf("%s: %s, %q; want %s, %q", c.metric, l.Verdict, l.meaning(), c.want, c.words)
		}
	}
}

// TestConditionsFirst: the differences in conditions are said before any
// number, and a change during a campaign too.
func TestConditionsFirst(t *testing.T) {
	c0 := conditions.Conditions{Driver: "580.95", GPUs: []gpu.Conditions{{Index: 3, PowerLimitW: 600}}, Packages: map[string]string{"vllm": "0.13.0"}}
	c1 := conditions.Conditions{Driver: "590.12", GPUs: []gpu.Conditions{{Index: 3, PowerLimitW: 450}}, Packages: map[string]string{"vllm": "0.14.1"}}
	a, b := rec("bench0", "finished", nil), rec("bench1", "finished", nil)
	book0, book1 := conditions.NewBook(c0), conditions.NewBook(c1)
	book1.Changes = []conditions.Change{{What: "GPU 3 power limit", Old: "450 W", New: "300 W", Phase: "decode"}}
	a.Conditions, b.Conditions = &book0, &book1
	text := Compare(a, b, Options{}).Text()
	for _, want := range []string{"driver 580.95 → 590.12", "GPU 3 power limit 600 W → 450 W", "vllm 0.13.0 → 0.14.1",
		"bench1 (new), at the start of decode: GPU 3 power limit 450 W → 300 W"} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
}

// TestMetricsOnly: where a phase names its metrics, compare judges those
// alone (a --save-result name finds the column the block names); where
// none is named, a column that is the same constant on both sides (a
// setting, a count) is left out and said in a note.
func TestMetricsOnly(t *testing.T) {
	named := []record.Phase{{ID: "decode", Metrics: []string{"output_throughput", "p99_tpot_ms"}, Better: map[string]campaign.Direction{"p99_tpot_ms": "lower"}}}
	vals := func(tok, tpot float64) map[string]any {
		return map[string]any{"output_token_throughput_tok_s": tok, "p99_tpot_ms": tpot, "successful_requests": 1000.0, "total_input_tokens": 512000.0, "benchmark_duration_s": 12.0 + tok/100}
	}
	r := Compare(rec("a", "finished", named, row("decode", "c=8", vals(380, 9))), rec("b", "finished", named, row("decode", "c=8", vals(420, 9.1))), Options{Tolerance: 0.02})
	var got []string
	for _, l := range r.Lines {
		got = append(got, l.Metric)
	}
	if strings.Join(got, " ") != "output_token_throughput_tok_s p99_tpot_ms" {
		t.Errorf("lines of %v; want the two metrics alone", got)
	}
	unnamed := []record.Phase{{ID: "decode"}}
	r = Compare(rec("a", "finished", unnamed, row("decode", "c=8", vals(380, 9))), rec("b", "finished", unnamed, row("decode", "c=8", vals(420, 9.1))), Options{Tolerance: 0.02})
	got = nil
	for _, l := range r.Lines {
		got = append(got, l.Metric)
	}
	if strings.Join(got, " ") != "benchmark_duration_s output_token_throughput_tok_s p99_tpot_ms" {
		t.Errorf("lines of %v; want every column that is no constant", got)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "2 column(s) left out: the same constant on both sides") {
		t.Errorf("notes: %s", notes)
	}
}

// TestOneRunAgainstTheBaselinesSpread: a first repeat is judged against
// the baseline's own spread (its 95% prediction interval), not the
// tolerance: inside it is noise however far past 2%, outside it is worse.
func TestOneRunAgainstTheBaselinesSpread(t *testing.T) {
	ph := []record.Phase{{ID: "g", Better: map[string]campaign.Direction{"tflops": "higher"}}}
	base := rec("base", "finished", ph, row("g", "m=1", map[string]any{"tflops": 600.0}), row("g", "m=1", map[string]any{"tflops": 640.0}), row("g", "m=1", map[string]any{"tflops": 620.0}))
	// mean 620, sd 20, n 3: t(0.975, 2) = 4.3027 · 20 · √(4/3) = 99.366.
	for _, c := range []struct {
		v    float64
		want Verdict
	}{{590, Noise}, {660, Noise}, {515, Worse}, {725, Better}} {
		l := lineOf(t, Compare(base, rec("new", "running", ph, row("g", "m=1", map[string]any{"tflops": c.v})), Options{Tolerance: 0.02}), "g", "m=1", "tflops")
		if l.Verdict != c.want || !strings.Contains(l.Basis, "prediction interval 620 ± 99.366") {
			t.Errorf("%v against 600/640/620: %s (%s); want %s", c.v, l.Verdict, l.Basis, c.want)
		}
	}
}

// TestLiveSaysTheFirstMetric: the live word is of the phase's first
// metric (vllm-bench's: output token throughput), never of a count that
// comes first in the row, and a first run is held against the
// baseline's spread.
func TestLiveSaysTheFirstMetric(t *testing.T) {
	p, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte("name: c\nphases:\n  - id: decode\n    steps:\n      - run: |\n          true\n        results: {format: vllm-bench}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ph := []record.Phase{{ID: "decode"}}
	var rows []record.Row
	for _, tok := range []float64{380, 400, 420} {
		rows = append(rows, row("decode", "", map[string]any{"successful_requests": 1000.0, "output_token_throughput_tok_s": tok, "p99_tpot_ms": 9.0}))
	}
	live := NewLive(rec("base", "finished", ph, rows...), p, Options{Tolerance: 0.02})
	// p99_tpot_ms comes before the throughput in the row, and has a way
	// too: the metrics' order decides.
	got := live.Say("decode", "", []string{"successful_requests", "p99_tpot_ms", "output_token_throughput_tok_s"}, []any{1000.0, 9.0, 370.0})
	// 370 is 7.5% below 400, far past the 2% tolerance, yet inside the
	// baseline's own spread (400 ± 20 · 4.3 · 1.15 = ± 99).
	if !strings.HasPrefix(got, "output_token_throughput_tok_s 370: ") || !strings.Contains(got, "within noise") {
		t.Errorf("live word %q; want the throughput, within the baseline's noise", got)
	}
}

// TestSameCampaignTwice: a campaign compared with its own earlier run
// (after --fresh) names its sides apart, each by when it started: a
// record rebuilt by report, written later, names them the same.
func TestSameCampaignTwice(t *testing.T) {
	ph := []record.Phase{{ID: "p"}}
	a := rec("bench", "finished", ph, row("p", "", map[string]any{"x": 10.0}))
	b := rec("bench", "finished", ph, row("p", "", map[string]any{"x": 12.0}))
	a.Campaign.Started = a.Campaign.Written
	b.Campaign.Started = a.Campaign.Written.Add(26 * time.Hour)
	b.Campaign.Written = b.Campaign.Started.Add(5 * time.Minute) // a later write (or report) names it by its start
	r := Compare(a, b, Options{Tolerance: 0.02})
	if r.Old.Name != "bench (old, 2026-12-03 10:00)" || r.New.Name != "bench (new, 2026-12-04 12:00)" {
		t.Errorf("sides named %q and %q", r.Old.Name, r.New.Name)
	}
	if md := r.Markdown(0); !strings.Contains(md, "bench (new, 2026-12-04 12:00)") {
		t.Errorf("markdown does not tell them apart:\n%s", md)
	}
}

// TestLiveLearnsAsRunsCome: each new result is said with its change
// against the baseline at its point; the verdict learns as the repeats
// come: one run against three is judged by the three's spread (their
// prediction interval), two and three against three by Welch's test.
func TestLiveLearnsAsRunsCome(t *testing.T) {
	p, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte("name: bench1\nphases:\n  - id: gemm\n    sweep: {m: [1, 64]}\n    repeat: 3\n    expect: {tflops: \">= 1\"}\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []record.Row
	for _, m := range []string{"m=1", "m=64"} {
		for r := 1; r <= 3; r++ {
			v := 10.0 + float64(r)
			if m == "m=64" {
				v = 640 + float64(r)
			}
			rows = append(rows, record.Row{Phase: "gemm", Point: m, Repeat: r, Values: map[string]any{"tflops": v}})
		}
	}
	live := NewLive(&record.Record{Campaign: record.Campaign{Name: "bench0"}, Phases: []record.Phase{{ID: "gemm"}}, Rows: rows}, p, Options{Tolerance: 0.02})
	for i, c := range []struct {
		point string
		v     float64
		want  string
	}{
		{"m=1", 12, "tflops 12 at m=1: +0.0% vs bench0, within noise"}, // 11-13's spread
		{"m=64", 705, "tflops 705 at m=64: +9.8% vs bench0, better, beyond noise"},
		{"m=1", 13, "tflops 13 at m=1: +4.2% vs bench0, within noise"}, // 12, 13 against 11, 12, 13: Welch
		{"m=64", 706, "tflops 706 at m=64: +9.9% vs bench0, better, beyond noise"},
	} {
		_, m, _ := strings.Cut(c.point, "=")
		got := live.Say("gemm", c.point, []string{"m", "repeat", "tflops"}, []any{m, float64(i/2 + 1), c.v})
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("result %d said %q; want it to start %q", i+1, got, c.want)
		}
	}
}

// TestRunsAsTheModelCountsThem: a record with its results model is held
// by its points' runs as the model counted them, not by its rows: the
// rows of a unit that failed part-way (a 40 here) are no run, and the
// verdict of three steady runs against three is not spoiled by them.
func TestRunsAsTheModelCountsThem(t *testing.T) {
	model := func(mean, cv float64) *results.Phase {
		return &results.Phase{ID: "g", Kind: results.KindSweep, Points: []results.Point{{Key: "m=1", Index: 1, State: results.Done, Runs: 3, Planned: 3,
			Stats: []results.Stat{{Metric: "tflops", N: 3, Mean: mean, CV: cv}}}}}
	}
	rows := func(vs ...float64) []record.Row {
		var out []record.Row
		for _, v := range vs {
			out = append(out, row("g", "m=1", map[string]any{"tflops": v}))
		}
		return out
	}
	old := rec("base", "finished", []record.Phase{{ID: "g", Better: map[string]campaign.Direction{"tflops": "higher"}, Model: model(100, 0.01)}}, rows(99, 100, 101, 40)...)
	cur := rec("new", "finished", []record.Phase{{ID: "g", Model: model(100.5, 0.01)}}, rows(99.5, 100.5, 101.5)...)
	l := lineOf(t, Compare(old, cur, Options{Tolerance: 0.02}), "g", "m=1", "tflops")
	if l.Old.N != 3 || l.Old.Mean != 100 || l.Verdict != Noise {
		t.Errorf("old side n=%d mean %v, verdict %s; want the model's 3 runs of 100, within noise (the failed unit's 40 is no run)", l.Old.N, l.Old.Mean, l.Verdict)
	}
}

// TestBudgetMoved: a decode row's budget on both sides; a change that
// cut the all-reduce (a one-shot kernel: 2.95 → 1.0 ms) and left the rest
// is said to have moved the all-reduce; a row without a curve on one side
// says nothing of what moved.
func TestBudgetMoved(t *testing.T) {
	rec := func(name string, ar, rest float64, curve bool) *record.Record {
		b := &record.Budget{TPOTms: 1.1 + ar + rest, FloorMs: 1.1, RestMs: rest}
		if curve {
			b.AllReduce = &record.AllReduceTerm{Ms: ar}
		}
		return &record.Record{Campaign: record.Campaign{Name: name}, Phases: []record.Phase{{ID: "decode", Status: "done",
			Floor: &record.Floor{Points: []record.FloorPoint{{Point: "c=1", Batch: 1, Budget: b}}}}}}
	}
	r := Compare(rec("nccl", 2.952, 15.7, true), rec("oneshot", 1.0, 15.6, true), Options{})
	if len(r.Budgets) != 1 || !strings.HasPrefix(r.Budgets[0].Moved(), "the all-reduce (-1.95 ms of the TPOT's -2.05)") {
		t.Fatalf("budgets %+v; moved %q", r.Budgets, r.Budgets[0].Moved())
	}
	if md := r.Markdown(0); !strings.Contains(md, "| decode | c=1 | 19.752 → 17.7 | 2.952 → 1 | 15.7 → 15.6 | the all-reduce") {
		t.Errorf("the markdown lacks the row:\n%s", md)
	}
	if r := Compare(rec("a", 2.952, 15.7, false), rec("b", 1.0, 15.6, true), Options{}); len(r.Budgets) != 1 || r.Budgets[0].Moved() != "" {
		t.Errorf("a side without a curve: %+v", r.Budgets)
	}
	// A change of GEMM kernels: both sides measured the GEMMs' excess
	// (3 → 1 ms) and the rest held: the GEMMs moved. Measured on one side
	// only, the excess is held with the other's rest.
	withGEMM := func(r *record.Record, ms float64) *record.Record {
		b := r.Phases[0].Floor.Points[0].Budget
		b.GEMM, b.RestMs = &record.GEMMTerm{Ms: ms}, b.RestMs-ms
		return r
	}
	r = Compare(withGEMM(rec("old", 2.952, 15.7, true), 3), withGEMM(rec("new", 2.952, 13.7, true), 1), Options{})
	if got := r.Budgets[0].Moved(); !strings.HasPrefix(got, "the GEMMs above their floor (-2 ms of the TPOT's -2)") {
		t.Errorf("a GEMM change: moved %q", got)
	}
	r = Compare(withGEMM(rec("old", 2.952, 15.7, true), 3), rec("new", 2.952, 13.7, true), Options{})
	if got := r.Budgets[0].Moved(); !strings.HasPrefix(got, "the rest (-2 ms") {
		t.Errorf("GEMMs measured on one side: moved %q; want the rest, the GEMMs in it", got)
	}
}
