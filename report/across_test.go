package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/runner"
)

// acrossRecord writes the record of a service grid, seqs x tokens, with
// decode (c, twice each) under each point, tok_s = seqs·c·(1 or 2) +
// repeat; decode.256.8192 not run yet. extra goes under decode's title.
func acrossRecord(t *testing.T, extra string) (md, path string) {
	t.Helper()
	plan := parsePlan(t, "/c/c.yaml", `name: srv
phases:
  - id: serve
    sweep: {seqs: [64, 256], tokens: [2048, 8192]}
    service:
      run: |
        vllm serve --max-num-seqs ${seqs} --max-num-batched-tokens ${tokens}
      ready: {log: up}
  - id: decode
    title: Decode
`+extra+`    needs: [serve]
    sweep: {c: [1, 4]}
    repeat: 2
    steps:
      - run: |
          bench ${c}
`)
	st := &runner.State{Name: "srv"}
	for _, ph := range plan.Phases {
		ps := runner.PhaseState{ID: ph.ID, Title: ph.Title, Status: runner.Done, Attempt: 1}
		if ph.ID == "decode.256.8192" {
			ps.Status = runner.Pending
		}
		for i, step := range ph.AllSteps() {
			ss := runner.StepState{Index: i, Status: ps.Status}
			if ph.Service == nil && ps.Status == runner.Done {
				seqs := map[string]float64{"64": 64, "256": 256}[ph.Point.Values[0].Value]
				tokens := map[string]float64{"2048": 1, "8192": 2}[ph.Point.Values[1].Value]
				c := []float64{1, 4}[step.Unit.Values[0]]
				// Rows as the runner writes them: the service's point first.
				ss.Results = []runner.Row{{Cols: []string{"seqs", "tokens", "c", "repeat", "tok_s"},
					Values: []any{seqs, tokens * 2048, c, float64(step.Unit.Repeat), seqs*c*tokens + float64(step.Unit.Repeat)}}}
			}
			ps.Steps = append(ps.Steps, ss)
		}
		st.Phases = append(st.Phases, ps)
	}
	path = filepath.Join(t.TempDir(), "srv.md")
	if err := NewWriter(path, plan, testEnv(), nil, "").Write(st); err != nil {
		t.Fatal(err)
	}
	return readFileT(t, path), path
}

// TestAcrossServicePoints: a phase run under each point of a swept
// service is answered as a whole after its last copy: a row per service
// point, its own points across, each cell that copy's mean and interval;
// a chart along its own axis with a line per service point. A copy not
// yet run is a dash, not a zero.
func TestAcrossServicePoints(t *testing.T) {
	md, path := acrossRecord(t, "")
	block := md[strings.Index(md, "<!-- greenlight:begin across:decode -->"):]
	if i := strings.Index(md, "<!-- greenlight:end phase:decode.256.8192 -->"); i < 0 || i > strings.Index(md, "across:decode") {
		t.Errorf("the block across the points is not after the last copy:\n%s", md)
	}
	for _, want := range []string{
		"## Decode across serve's points (`decode`)",
		"seqs × tokens",
		"| seqs · tokens | c=1 | c=4 |",
		"| 64 · 2048 | 65.5 ± 6.4 (n=2) | 257.5 ± 6.4 (n=2) |",  // 64·1·1 + 1, 2
		"| 256 · 8192 | — | — |",                                // not yet run
		"| 64 · 8192 | 129.5 ± 6.4 (n=2) | 513.5 ± 6.4 (n=2) |", // 64·c·2 + 1, 2
		"![tok_s by c](srv.decode.tok_s.svg)",
		// 256·2048 at c=4: 256·4·1 + 1.5; the next, 64·8192: 64·4·2 + 1.5.
		"| tok_s (highest, a rate by its name) | c=4 | 256 · 2048: 1025.5 ± 6.4 (n=2) | 64 · 8192: 513.5 ± 6.4 (n=2) | yes: 512 apart (Welch's t-test, p < 0.001, n = 2 and 2) |",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
	for _, not := range []string{"#### seqs", "#### tokens", "#### repeat"} {
		if strings.Contains(block, not) {
			t.Errorf("a point column is charted as a metric: %q", not)
		}
	}
	svg := readFileT(t, filepath.Join(filepath.Dir(path), "srv.decode.tok_s.svg"))
	for _, want := range []string{"seqs=64 · tokens=2048", "seqs=256 · tokens=2048", ">c<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}

// TestBestSettingLower: where the metric is better lower, the best
// setting is the lowest.
func TestBestSettingLower(t *testing.T) {
	md, _ := acrossRecord(t, "    better: lower\n")
	if want := "| tok_s (lowest) | c=1 | 64 · 2048: 65.5 ± 6.4 (n=2) | 64 · 8192: 129.5 ± 6.4 (n=2) | yes: 64 apart (Welch's t-test, p < 0.001, n = 2 and 2) |"; !strings.Contains(md, want) {
		t.Errorf("the record lacks %q:\n%s", want, md[strings.Index(md, "#### The best"):])
	}
}
