package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestSweepSaysANoisyPoint: a point whose repeats disagree beyond the
// noise limit is said as it happens, once; a quiet one is not.
func TestSweepSaysANoisyPoint(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	p := loadCampaign(t, `
name: noisy
phases:
  - id: g
    sweep: {m: [1, 2]}
    repeat: 3
    noise: 5%
    steps:
      - run: |
          if [ ${m} = 1 ]; then v=$(( 100 + GREENLIGHT_REPEAT * 20 )); else v=100; fi
          echo "{\"tflops\": $v}" >> "$GREENLIGHT_RESULTS"
`)
	h := start(t, p, testOptions(t))
	st := h.finished(60 * time.Second)
	var said []string
	for _, e := range h.seen {
		if e.Kind == Warning && strings.Contains(e.Message, "is noisy") {
			said = append(said, e.Message)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "point m=1 is noisy") || !strings.Contains(said[0], "tflops") {
		t.Errorf("noise said %q; want once, of m=1", said)
	}
	if g := st.Phase("g"); g.Status != Done {
		t.Errorf("g = %s", g.Status)
	}
}
