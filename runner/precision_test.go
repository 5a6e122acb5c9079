package runner

import (
	"slices"
	"strings"
	"testing"
	"time"
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
