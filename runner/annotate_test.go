package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/compare"
	rec "github.com/greenlight-run/greenlight/record"
)

// TestResultsSaidWithTheirChange: with a baseline, each new result is
// said with its main metric's change first (what a narrow window shows),
// at its point; the verdict learns as the repeats come: one run against
// three is judged by the three's spread (their prediction interval),
// two and three against three by Welch's test.
func TestResultsSaidWithTheirChange(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: bench1
phases:
  - id: gemm
    sweep: {m: [1, 64]}
    repeat: 3
    expect: {tflops: ">= 1"}
    steps:
      - run: |
          echo "{\"tflops\": $(( ${m} * 11 + GREENLIGHT_REPEAT )), \"note\": \"x\"}" >> "$GREENLIGHT_RESULTS"
`)
	var rows []rec.Row
	for _, m := range []string{"m=1", "m=64"} {
		for r := 1; r <= 3; r++ {
			v := 10.0 + float64(r)
			if m == "m=64" {
				v = 640 + float64(r)
			}
			rows = append(rows, rec.Row{Phase: "gemm", Point: m, Repeat: r, Values: map[string]any{"tflops": v}})
		}
	}
	base := &rec.Record{Campaign: rec.Campaign{Name: "bench0"}, Phases: []rec.Phase{{ID: "gemm"}}, Rows: rows}
	live := compare.NewLive(base, p, compare.Options{Tolerance: 0.02})
	opts := testOptions(t)
	opts.Annotate = func(phase, point string, row Row) string { return live.Say(phase, point, row.Cols, row.Values) }
	h := start(t, p, opts)
	h.finished(60 * time.Second)
	var said []string
	for _, e := range h.seen {
		if e.Kind == ResultRecorded {
			said = append(said, e.Message)
		}
	}
	want := []string{
		"gemm: tflops 12 at m=1: +0.0% vs bench0, within noise · result m=1 repeat=1 tflops=12 note=x", // 11-13's spread
		"gemm: tflops 705 at m=64: +9.8% vs bench0, better, beyond noise · result m=64 repeat=1",
		"gemm: tflops 13 at m=1: +4.2% vs bench0, within noise · result", // 12, 13 against 11, 12, 13: Welch
		"gemm: tflops 706 at m=64: +9.9% vs bench0, better, beyond noise · result",
	}
	if len(said) != 6 {
		t.Fatalf("said %d results, want 6:\n%s", len(said), strings.Join(said, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(said[i], w) {
			t.Errorf("result %d said\n  %s\nwant it to start\n  %s", i+1, said[i], w)
		}
	}
}
