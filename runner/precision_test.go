package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/state"
)

// TestRepeatUntilPrecise: repeat: {until: 2%, max: 6} stops a steady
// point after its 3 runs (the rest skipped, saying why), runs a noisy one
// to its max and says so; once a point has settled, the ETA counts the
// runs the points took, not max.
func TestRepeatUntilPrecise(t *testing.T) {
	p := loadCampaign(t, `
name: tight
phases:
  - id: gemm
    sweep: {m: [1, 2]}
    repeat: {until: 2%, max: 6}
    order: grouped
    steps:
      - run: |
          awk -v m=${m} -v r=$GREENLIGHT_REPEAT 'BEGIN { srand(m * 1000 + r); noise = (m == 1) ? 0.002 : 0.3; printf "{\"tflops\": %.4f}\n", 100 * (1 + noise * (rand() - 0.5)) }' >> "$GREENLIGHT_RESULTS"
          sleep 0.2
`)
	h := start(t, p, testOptions(t))
	// m=2's first run starts once m=1 has settled in 3 runs.
	h.until(30*time.Second, "m=2's first run", func(e Event) bool {
		return e.Kind == StepStarted && e.Phase == "gemm" && e.Step == 6
	})
	time.Sleep(50 * time.Millisecond) // a poll: the ETA is the loop's
	mid := h.r.Snapshot().Phase("gemm")
	var each time.Duration
	for _, ss := range mid.Steps[:3] {
		each += ss.Ended.Sub(ss.Started)
	}
	each /= 3
	if eta := mid.ETA; !eta.Known || eta.Remaining > 4*each {
		t.Errorf("ETA at m=2's start %+v (each run %s); want m=2's 3 runs as m=1 took, not its 6", eta, each)
	}
	st := h.finished(60 * time.Second)
	g := st.Phase("gemm")
	var ran []string
	for _, ss := range g.Steps {
		switch ss.Status {
		case Done:
			ran = append(ran, ss.Point)
		case Skipped:
			if ss.Point != "m=1" || ss.Reason != "precise after 3 runs: every metric's 95% interval within 2% of its mean" {
				t.Errorf("%s skipped: %q", ss.Point, ss.Reason)
			}
		}
	}
	if want := []string{"m=1", "m=1", "m=1", "m=2", "m=2", "m=2", "m=2", "m=2", "m=2"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v; want m=1 3 times, m=2 6", ran)
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool {
		return strings.Contains(w, "point m=2 ran its 6 runs (max) and is still not within 2%: tflops ±")
	}) {
		t.Errorf("no word that m=2 stopped at max: %q", st.Warnings)
	}
}

// TestPreciseUnitsWhole: a unit of two steps is decided at its first step
// and skipped whole; the metrics judged are the phase's, found by a
// --save-result name as the record's tables find them (a column the phase
// does not name, however noisy, does not hold the point).
func TestPreciseUnitsWhole(t *testing.T) {
	p := loadCampaign(t, `
name: whole
phases:
  - id: serve
    sweep: {c: [1]}
    repeat: {until: 2%, max: 5}
    order: grouped
    metrics: [output_throughput]
    steps:
      - run: "echo warm ${c}"
      - run: "echo bench"
`)
	pr := newPhaseRun(p.Phase("serve"), t.TempDir())
	noisy := []float64{1, 9, 4}
	for rep := 0; rep < 3; rep++ {
		for k := 0; k < 2; k++ {
			ss := &pr.state.Steps[rep*2+k]
			ss.Status = Done
			if k == 1 {
				ss.Results = []Row{{Cols: []string{"output_token_throughput_tok_s", "ttft_ms"}, Values: []any{1000.0 + float64(rep), noisy[rep]}}}
			}
		}
	}
	if u, why := pr.preciseAlready(7); why != "" {
		t.Errorf("the unit's second step decided on its own: %v %q", u, why)
	}
	u, why := pr.preciseAlready(6)
	if why != "precise after 3 runs: every metric's 95% interval within 2% of its mean" || !slices.Equal(u.Steps, []int{6, 7}) {
		t.Errorf("unit 4: %v %q; want skipped whole, precise by its named metric", u, why)
	}
	if next := pr.nextStep(6); next != len(pr.state.Steps) || pr.state.Steps[7].Status != Skipped || pr.state.Steps[9].Status != Skipped {
		t.Errorf("next step %d; statuses %v", next, []Status{pr.state.Steps[6].Status, pr.state.Steps[7].Status, pr.state.Steps[8].Status, pr.state.Steps[9].Status})
	}
}

// TestExpectedRunsByOutcome: the runs a point of an until: sweep is
// expected to take are those of the points the rule settled (precise
// after 3, or all 6 run), not of a point you skipped after one run, nor
// of one still running.
func TestExpectedRunsByOutcome(t *testing.T) {
	p := loadCampaign(t, `
name: expect
phases:
  - id: gemm
    sweep: {m: [1, 2, 3, 4]}
    repeat: {until: 2%, max: 6}
    order: grouped
    steps:
      - run: |
          echo '{"tflops": 1}' >> "$GREENLIGHT_RESULTS"
`)
	pr := newPhaseRun(p.Phase("gemm"), t.TempDir())
	set := func(point, repeat int, st Status, why string) {
		ss := &pr.state.Steps[point*6+repeat]
		ss.Status, ss.Reason = st, why
	}
	skip := func(point, repeat int, by state.SkipBy, why string) {
		skipStep(&pr.state.Steps[point*6+repeat], by, why)
	}
	if got := pr.expectedRuns(); got != 6 {
		t.Errorf("before any point settled: %d; want max, 6", got)
	}
	for r := range 6 { // m=1: precise after 3 runs
		if r < 3 {
			set(0, r, Done, "")
		} else {
			skip(0, r, state.SkipPrecise, whyPrecise+"3 runs: every metric's 95% interval within 2% of its mean")
		}
	}
	for r := range 6 { // m=2: skipped by you after its first run
		if r == 0 {
			set(1, r, Done, "")
		} else {
			skip(1, r, state.SkipByYou, whyByYou+"m=2)")
		}
	}
	set(2, 0, Done, "") // m=3: under way
	set(2, 1, Running, "")
	if got := pr.expectedRuns(); got != 3 {
		t.Errorf("m=1 precise after 3, m=2 skipped by you after 1: %d; want 3", got)
	}
	for r := range 6 { // m=4: all 6 run
		set(3, r, Done, "")
	}
	if got := pr.expectedRuns(); got != 5 {
		t.Errorf("m=1 after 3, m=4 after 6: %d; want their mean rounded up, 5", got)
	}
}
