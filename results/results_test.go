package results

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

func plan(t testing.TB, body string) *campaign.Plan {
	t.Helper()
	p, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const grid = `name: c
phases:
  - id: g
    sweep: {m: [1, 2, 3, 4, 5, 6]}
    repeat: {until: 2%, max: 4}
    order: grouped
    steps:
      - run: |
          true
`

// unit is one run's step: its status, its reason, its tflops.
type unit struct {
	st  state.Status
	why string
	v   float64
	by  state.SkipBy
}

func phaseState(ph *campaign.Phase, units [][]unit, at time.Time) *state.PhaseState {
	p := &state.PhaseState{ID: ph.ID, Status: state.Running, Started: at}
	for i, s := range ph.AllSteps() {
		u := units[s.Unit.Point][s.Unit.Repeat-1]
		ss := state.StepState{Index: i, Status: u.st, Reason: u.why, Skip: u.by, Ended: at}
		if u.st == state.Done {
			ss.Results = []state.Row{{Phase: ph.ID, Step: i, Cols: []string{"m", "repeat", "tflops"}, Values: []any{"1", float64(s.Unit.Repeat), u.v}}}
		}
		p.Steps = append(p.Steps, ss)
	}
	return p
}

// TestPointStates: each point's state, runs and skip by the one rule,
// noise judged on complete points only.
func TestPointStates(t *testing.T) {
	p := plan(t, grid)
	ph := p.Phase("g")
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	d, s, pend := state.Done, state.Skipped, state.Pending
	units := [][]unit{
		{{d, "", 100, ""}, {d, "", 100, ""}, {d, "", 100, ""}, {s, "precise after 3 runs: every metric's 95% interval within 2% of its mean", 0, state.SkipPrecise}},
		{{d, "", 100, ""}, {d, "", 140, ""}, {d, "", 120, ""}, {d, "", 130, ""}},   // noisy, ran to its max
		{{d, "", 100, ""}, {d, "", 140, ""}, {pend, "", 0, ""}, {pend, "", 0, ""}}, // disagrees, but not done: not judged
		{{d, "", 100, ""}, {d, "", 101, ""}, {s, "skipped by you (point m=4)", 0, state.SkipByYou}, {s, "skipped by you (point m=4)", 0, state.SkipByYou}},
		{{s, "until: failed: m=4 missed its expectation", 0, state.SkipCut}, {s, "until: failed: m=4 missed its expectation", 0, state.SkipCut}, {s, "until: failed: x", 0, state.SkipCut}, {s, "until: failed: x", 0, state.SkipCut}},
		{{d, "", 100, ""}, {state.Stopped, "stopped by you", 0, ""}, {pend, "", 0, ""}, {pend, "", 0, ""}},
	}
	rp := PhaseOf(ph, phaseState(ph, units, at), at.Add(time.Minute))
	want := []struct {
		state    PointState
		runs     int
		noisy    bool
		complete bool
	}{{Precise, 3, false, true}, {Done, 4, true, true}, {Pending, 2, false, false}, {Skipped, 2, false, true}, {Cut, 0, false, true}, {Stopped, 1, false, false}}
	for i, w := range want {
		pt := rp.Points[i]
		if pt.State != w.state || pt.Runs != w.runs || pt.Noisy != w.noisy || pt.Complete != w.complete {
			t.Errorf("point %s: %s after %d runs, noisy %v, complete %v; want %s, %d, %v, %v", pt.Key, pt.State, pt.Runs, pt.Noisy, pt.Complete, w.state, w.runs, w.noisy, w.complete)
		}
	}
	if sk := rp.Points[3].Skip; sk == nil || sk.AfterRuns != 2 || sk.NotRun != 2 || sk.At == nil || !sk.At.Equal(at) {
		t.Errorf("m=4's skip: %+v", sk)
	}
	if c := rp.Count; c.Points != 6 || c.Through != 4 || c.Precise != 1 || c.Done != 1 || c.Skipped != 1 || c.Cut != 1 || c.Pending != 1 || c.Stopped != 1 {
		t.Errorf("count: %+v", c)
	}
	if rp.Noise == nil || rp.Noise.Basis != "default" || len(rp.Noise.Noisy) != 1 || rp.Noise.Noisy[0] != "m=2" {
		t.Errorf("noise: %+v", rp.Noise)
	}
	if st, _ := rp.Points[1].Stat("tflops"); st.N != 4 || st.Mean != 122.5 || !st.Noisy {
		t.Errorf("m=2's tflops: %+v", st)
	}
	if m := rp.Metrics; len(m) != 1 || m[0].Better != campaign.Higher || m[0].Basis != campaign.ByName {
		t.Errorf("metrics: %+v", m)
	}
	// A point cut by until: after its first run is cut, with that run.
	units[4][0] = unit{d, "", 90, ""}
	if pt := PhaseOf(ph, phaseState(ph, units, at), at).Points[4]; pt.State != Cut || pt.Runs != 1 {
		t.Errorf("m=5 cut after a run: %s after %d runs; want cut after 1", pt.State, pt.Runs)
	}
	units[4][0] = unit{s, "until: failed: m=4 missed its expectation", 0, state.SkipCut}
	// The third run lands and settles m=3: judged now, and not noisy
	// when it agrees... it does not: 100, 140, 120 disagree.
	units[2][2], units[2][3] = unit{d, "", 120, ""}, unit{d, "", 121, ""}
	rp = PhaseOf(ph, phaseState(ph, units, at), at)
	if pt := rp.Points[2]; pt.State != Done || !pt.Complete || !pt.Noisy {
		t.Errorf("m=3 once its runs are in: %+v", pt)
	}
}

// TestUnitValueIsTheMeanOfItsRows: a unit that prints several rows is one
// run, its value their mean.
func TestUnitValueIsTheMeanOfItsRows(t *testing.T) {
	p := plan(t, strings.Replace(grid, "{until: 2%, max: 4}", "2", 1))
	ph := p.Phase("g")
	st := &state.PhaseState{ID: "g", Status: state.Done}
	for i := range ph.AllSteps() {
		ss := state.StepState{Index: i, Status: state.Done}
		for _, v := range []float64{10, 20} {
			ss.Results = append(ss.Results, state.Row{Cols: []string{"tflops"}, Values: []any{v + float64(i%2)}})
		}
		st.Steps = append(st.Steps, ss)
	}
	rp := PhaseOf(ph, st, time.Now())
	if s, _ := rp.Points[0].Stat("tflops"); s.N != 2 || s.Mean != 15.5 {
		t.Errorf("m=1: %+v; want 2 runs of mean 15.5 (15 and 16)", s)
	}
}

// bigState is a finished grid of points × repeats units, one row each.
func bigState(b testing.TB, points, repeats int) (*campaign.Plan, *state.State) {
	vals := make([]string, points)
	for i := range vals {
		vals[i] = fmt.Sprint(i + 1)
	}
	p := plan(b, fmt.Sprintf("name: c\nphases:\n  - id: g\n    sweep: {m: [%s]}\n    repeat: %d\n    steps:\n      - run: |\n          true\n", strings.Join(vals, ", "), repeats))
	ph := p.Phase("g")
	ps := state.PhaseState{ID: "g", Status: state.Done}
	for i, s := range ph.AllSteps() {
		ps.Steps = append(ps.Steps, state.StepState{Index: i, Status: state.Done, Results: []state.Row{{
			Cols: []string{"m", "repeat", "tflops", "time_us"}, Values: []any{"1", float64(s.Unit.Repeat), 100 + float64(i%7), 50 + float64(i%3)}}}})
	}
	return p, &state.State{Phases: []state.PhaseState{ps}, Now: time.Now()}
}

// BenchmarkModel: the model of a campaign of 1,000, 5,000 and 20,000
// rows (points of 10 runs): O(rows); the budget is 50 ms at 20,000.
func BenchmarkModel(b *testing.B) {
	for _, rows := range []int{1000, 5000, 20000} {
		p, st := bigState(b, rows/10, 10)
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			for b.Loop() {
				if m := Of(p, st); len(m.Phases[0].Points) != rows/10 {
					b.Fatal("points")
				}
			}
		})
	}
}

// TestAStoppedSearchsProbesAreDone: a search stopped after probing 1 and
// 2 three times each: those points are done (the probe is judged; its
// spare runs are never run), as the record's table of probes says, the
// values never asked for are pending (the search goes on when the
// campaign runs), and none is counted skipped.
func TestAStoppedSearchsProbesAreDone(t *testing.T) {
	p := plan(t, `name: c
phases:
  - id: limit
    search:
      axis: concurrency
      range: [1, 16]
      slo: {tpot_ms: "<= 50"}
      resolution: 50%
    repeat: 3
    steps:
      - run: |
          true
`)
	ph := p.Phase("limit")
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	ps := &state.PhaseState{ID: ph.ID, Status: state.Stopped, Started: at}
	values := ph.Sweep.Search.Values
	for i, s := range ph.AllSteps() {
		v := values[s.Unit.Point]
		ss := state.StepState{Index: i, Status: state.Pending, Ended: at}
		if (v == 1 || v == 2) && s.Unit.Repeat <= 3 {
			ss.Status = state.Done
			ss.Results = []state.Row{{Phase: ph.ID, Step: i, Cols: []string{"concurrency", "repeat", "tpot_ms"}, Values: []any{fmt.Sprint(v), float64(s.Unit.Repeat), float64(v) + float64(s.Unit.Repeat)/100}}}
		}
		ps.Steps = append(ps.Steps, ss)
	}
	rp := PhaseOf(ph, ps, at)
	for _, pt := range rp.Points {
		want := Pending
		switch pt.Key {
		case "concurrency=1", "concurrency=2":
			want = Done
		}
		if pt.State != want {
			t.Errorf("%s: %s after %d runs; want %s", pt.Key, pt.State, pt.Runs, want)
		}
	}
	if c := rp.Count; c.Done != 2 || c.Skipped != 0 || c.NotProbed != 0 {
		t.Errorf("count %+v; want 2 done, none skipped or not probed", c)
	}
	if s := rp.Search; s == nil || len(s.Probes) != 2 || s.Done {
		t.Errorf("search %+v; want 2 probes, not done", s)
	}
}

// TestOutcomeIsTyped: a skipped unit is counted by the typed reason the
// runner gave (state.SkipBy), never by the words of its Reason.
func TestOutcomeIsTyped(t *testing.T) {
	p := plan(t, grid)
	ph := p.Phase("g")
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	d, s := state.Done, state.Skipped
	units := make([][]unit, 6)
	for i := range units {
		units[i] = []unit{{d, "", 100, ""}, {d, "", 100, ""}, {d, "", 100, ""}, {d, "", 100, ""}}
	}
	// Words that say one thing, a type that says another: the type wins.
	units[0][3] = unit{s, "skipped by you (point m=1)", 0, state.SkipPrecise}
	units[1][3] = unit{s, "precise after 3 runs", 0, state.SkipByYou}
	units[2][3] = unit{s, "", 0, state.SkipCut}
	got := PointUnits(ph, phaseState(ph, units, at).Steps)
	for point, want := range map[int]Outcome{0: UnitPrecise, 1: UnitSkipped, 2: UnitCut} {
		if o := got[point][3].Outcome; o != want {
			t.Errorf("point %d's last unit: %s; want %s (by its typed skip)", point, o, want)
		}
	}
}
