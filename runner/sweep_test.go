package runner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
)

// TestSweepUntilStopsAtTheFirstFailure: along the last axis, the first
// point whose expectation fails stops the points after it, on that line
// of the grid only, and not before; rows carry their point.
func TestSweepUntilStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	p := loadCampaign(t, fmt.Sprintf(`
name: slo
phases:
  - id: decode
    sweep:
      model: [small, big]
      c: [1, 2, 4, 8]
    until: failed
    expect: {tpot_ms: "<= 20"}
    steps:
      - run: |
          echo "${model} ${c}" >> %s
          if [ ${model} = big ]; then t=$(( ${c} * 10 )); else t=${c}; fi
          echo "{\"tpot_ms\": $t}" >> "$GREENLIGHT_RESULTS"
`, ran))
	st := start(t, p, testOptions(t)).finished(60 * time.Second)
	got := fileLines(t, ran)
	want := []string{"small 1", "small 2", "small 4", "small 8", "big 1", "big 2", "big 4"} // big 4 (40 ms) fails: big 8 is cut
	if !slices.Equal(got, want) {
		t.Errorf("ran %v; want %v", got, want)
	}
	ph := st.Phase("decode")
	last := ph.Steps[7]
	if last.Status != Skipped || !strings.Contains(last.Reason, "model=big,c=4") {
		t.Errorf("big 8 = %s %q; want skipped by model=big,c=4", last.Status, last.Reason)
	}
	row := ph.Steps[5].Results[0]
	if !slices.Equal(row.Cols, []string{"model", "c", "repeat", "tpot_ms"}) || row.Values[0] != "big" || row.Values[1] != 2.0 {
		t.Errorf("a row of big 2: %v %v", row.Cols, row.Values)
	}
}

// TestSweepResumesPerPoint: the runner killed (kill -9) in the middle of
// a grid; a new one runs each point once, the one that was running
// re-adopted, not run again.
func TestSweepResumesPerPoint(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	p := loadCampaign(t, fmt.Sprintf(`
name: grid
phases:
  - id: g
    sweep: {m: [1, 2, 3, 4, 5, 6]}
    repeat: 2
    steps:
      - run: |
          echo "${m} $GREENLIGHT_REPEAT" >> %s
          sleep 0.2
`, ran))
	state := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, state, `"kind":"step-start","phase":"g","step":5,`)
	st := startAgain(t, p, state).finished(60 * time.Second)
	got := fileLines(t, ran)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	for m := 1; m <= 6; m++ {
		for r := 1; r <= 2; r++ {
			if k := fmt.Sprintf("%d %d", m, r); seen[k] != 1 {
				t.Errorf("point m=%d repeat %d ran %d times (%v)", m, r, seen[k], got)
			}
		}
	}
	if g := st.Phase("g"); g.Status != Done || len(g.Steps) != 12 {
		t.Errorf("g = %s, %d steps", g.Status, len(g.Steps))
	}
}

// fileLines is the file's lines, each whole.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// TestSweepSaysANoisyPoint: a point whose runs, all in, disagree beyond
// the noise limit is said once as its last run ends (an event, not a
// warning), naming each of its metrics that disagree (a column that is no
// metric is not one); a quiet point is not said, nor one whose first two
// runs disagree and whose third settles them (m=3: 100, 108, 104, 3.8%:
// before, said at its second run and never taken back).
func TestSweepSaysANoisyPoint(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	p := loadCampaign(t, `
name: noisy
phases:
  - id: g
    sweep: {m: [1, 2, 3]}
    repeat: 3
    noise: 5%
    metrics: [tflops, time_us]
    steps:
      - run: |
          case ${m}/$GREENLIGHT_REPEAT in 1/*) v=$(( 100 + GREENLIGHT_REPEAT * 20 ));; 3/2) v=108;; 3/3) v=104;; *) v=100;; esac
          echo "{\"tflops\": $v, \"time_us\": $(( 10000 / v )), \"requests\": $(( GREENLIGHT_REPEAT * 7 ))}" >> "$GREENLIGHT_RESULTS"
`)
	h := start(t, p, testOptions(t))
	st := h.finished(60 * time.Second)
	var said []string
	for _, e := range h.seen {
		if strings.Contains(e.Message, "is noisy") {
			said = append(said, e.Message)
			if e.Kind == Warning {
				t.Errorf("a noisy point said as a warning: %q", e.Message)
			}
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "point m=1 is noisy") || !strings.Contains(said[0], "in tflops (") ||
		!strings.Contains(said[0], ", time_us (") || strings.Contains(said[0], "requests") {
		t.Errorf("noise said %q; want once, of m=1, naming tflops and time_us and not requests (m=3 settled by its third run)", said)
	}
	if g := st.Phase("g"); g.Status != Done {
		t.Errorf("g = %s", g.Status)
	}
	// Each running step says its point as the runner's plan has it (the
	// window's x and phase line read it there).
	running := 0
	for _, e := range h.seen {
		if g := e.State.Phase("g"); g != nil {
			for _, ss := range g.Steps {
				if ss.Status == Running {
					running++
					if ss.Point != "m=1" && ss.Point != "m=2" && ss.Point != "m=3" {
						t.Fatalf("a running step's point %q", ss.Point)
					}
				}
			}
		}
	}
	if running == 0 {
		t.Error("no event showed a running step")
	}
}

// TestEditedGridRunsOnlyNewPoints: a finished sweep whose grid is edited
// (a value added to m, another value's fields changed) runs only the
// units it had not done; the kept units' rows stand, and a runner started
// again after that runs nothing and still has every row.
func TestEditedGridRunsOnlyNewPoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	path := filepath.Join(dir, "c.yaml")
	grid := func(ms, downK string) string {
		return fmt.Sprintf(`name: grid
phases:
  - id: g
    sweep:
      m: [%s]
      shape:
        - {name: up, k: 7168}
        - {name: down, k: %s}
    repeat: 2
    steps:
      - run: |
          echo "${m} ${shape} ${shape.k} $GREENLIGHT_REPEAT" >> %s
          echo "{\"t\": $(( ${m} * ${shape.k} ))}" >> "$GREENLIGHT_RESULTS"
`, ms, downK, ran)
	}
	state := filepath.Join(dir, "state")
	h := startAgain(t, writeCampaign(t, path, grid("1, 8", "2048")), state)
	h.finished(60 * time.Second)
	h.r.Close()
	os.Remove(ran)

	// m=64 added; down's k changed: its units are other work.
	p := writeCampaign(t, path, grid("1, 8, 64", "4096"))
	h = startAgain(t, p, state)
	st := h.finished(60 * time.Second)
	h.r.Close()
	got := fileLines(t, ran)
	slices.Sort(got)
	want := []string{"1 down 4096 1", "1 down 4096 2", "64 down 4096 1", "64 down 4096 2", "64 up 7168 1", "64 up 7168 2", "8 down 4096 1", "8 down 4096 2"}
	if !slices.Equal(got, want) {
		t.Errorf("after the edit ran %v; want only the new units %v", got, want)
	}
	rows := func(st *State) int {
		n := 0
		for _, s := range st.Phase("g").Steps {
			n += len(s.Results)
		}
		return n
	}
	if ph := st.Phase("g"); ph.Status != Done || rows(st) != 12 {
		t.Errorf("phase %s with %d rows; want done with all 12", ph.Status, rows(st))
	}
	os.Remove(ran)
	h = startAgain(t, p, state)
	st = h.finished(60 * time.Second)
	h.r.Close()
	if _, err := os.Stat(ran); err == nil || rows(st) != 12 {
		t.Errorf("a third runner ran %v and has %d rows; want nothing run and 12 rows", fileLines(t, ran), rows(st))
	}
}

// TestSkipOnePoint: a point skipped before it runs never runs; one
// skipped while it runs is stopped; the phase goes on with its other
// points and ends done; a bad point is refused with words; a runner
// started again keeps them skipped and runs nothing.
func TestSkipOnePoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	p := loadCampaign(t, fmt.Sprintf(`
name: skip
phases:
  - id: g
    sweep: {m: [1, 2, 3], shape: [up]}
    repeat: 2
    steps:
      - run: |
          echo "$GREENLIGHT_POINT $GREENLIGHT_REPEAT" >> %s
          sleep 1
  - id: plain
    steps:
      - run: "true"
`, ran))
	state := filepath.Join(dir, "state")
	h := startAgain(t, p, state)
	h.until(20*time.Second, "m=1's first run", func(e Event) bool { return e.Kind == StepStarted && e.Step == 0 })
	for _, c := range []struct{ phase, point, want string }{
		{"g", "m=9", `axis m has no value "9" (its values: 1, 2, 3)`},
		{"g", "k=1", `g has no axis "k" (its axes: m, shape)`},
		{"g", "m", "write it as GREENLIGHT_POINT does"},
		{"plain", "m=1", "plain is not a sweep"},
	} {
		if err := h.r.SkipPoint(c.phase, c.point); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SkipPoint(%s, %s) = %v; want an error saying %q", c.phase, c.point, err, c.want)
		}
	}
	if err := h.r.SkipPoint("g", "m=2"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "m=3's first run", func() bool {
		b, _ := os.ReadFile(ran)
		return strings.Contains(string(b), "m=3,shape=up 1")
	})
	if err := h.r.SkipPoint("g", "shape=up,m=3"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(60 * time.Second)
	h.r.Close()
	if got, want := fileLines(t, ran), []string{"m=1,shape=up 1", "m=3,shape=up 1", "m=1,shape=up 2"}; !slices.Equal(got, want) {
		t.Errorf("ran %v; want %v", got, want)
	}
	g := st.Phase("g")
	var statuses []Status
	for _, s := range g.Steps {
		statuses = append(statuses, s.Status)
	}
	if want := []Status{Done, Skipped, Skipped, Done, Skipped, Skipped}; g.Status != Done || !slices.Equal(statuses, want) {
		t.Errorf("phase %s, units %v; want done, %v", g.Status, statuses, want)
	}
	os.Remove(ran)
	st = startAgain(t, p, state).finished(30 * time.Second)
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("a runner started again ran %v", fileLines(t, ran))
	}
	statuses = nil
	for _, s := range st.Phase("g").Steps {
		statuses = append(statuses, s.Status)
	}
	if want := []Status{Done, Skipped, Skipped, Done, Skipped, Skipped}; !slices.Equal(statuses, want) {
		t.Errorf("after a restart the units are %v; want %v", statuses, want)
	}
}

// TestSweepETAFromMeasuredPoints: a point not run yet takes its time
// from the points measured in this attempt: a line fitted along a
// numeric axis where two or more are measured on it (times that grow
// with m), else the nearest measured point; said as such; with nothing
// measured, the estimate stands.
func TestSweepETAFromMeasuredPoints(t *testing.T) {
	p := loadCampaign(t, `
name: eta
phases:
  - id: g
    sweep: {m: [1, 2, 4, 8]}
    steps:
      - estimate: 1s
        run: |
          true
`)
	r, err := New(p, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr := r.phases[0]
	if d, src := r.guessStep(pr, 1); d != time.Second || src != SourceEstimate {
		t.Errorf("nothing measured: %v from %q; want the 1s estimate", d, src)
	}
	t0 := time.Now()
	done := func(i int, d time.Duration) {
		pr.state.Steps[i] = StepState{Index: i, Status: Done, Started: t0, Ended: t0.Add(d)}
	}
	done(0, 2*time.Second) // m=1
	done(3, 8*time.Second) // m=8
	if d, src := r.guessStep(pr, 1); math.Abs(d.Seconds()-(2+6.0/7)) > 1e-6 || src != SourceNeighbours {
		t.Errorf("m=2: %v from %q; want 2.857s (the line through m=1 and m=8) from measured points", d, src)
	}
	// The line through (1, 2s) and (8, 8s), at m=4: 2 + 3·6/7 s.
	if d, _ := r.guessStep(pr, 2); math.Abs(d.Seconds()-(2+3*6.0/7)) > 1e-6 {
		t.Errorf("m=4: %v; want 4.571s on the line through m=1 and m=8", d)
	}
	done(1, 4*time.Second)
	// Least squares through (1, 2), (2, 4), (8, 8), worked by hand:
	// slope 22.667/28.667, intercept 4.667 - slope·3.667; at 4: 4.930 s.
	if d, _ := r.guessStep(pr, 2); math.Abs(d.Seconds()-4.930232558) > 1e-6 {
		t.Errorf("m=4 from m=1, 2 and 8: %v; want the fitted 4.930s", d)
	}
}
