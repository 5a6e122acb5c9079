package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSearchRecord runs a search over a stand-in whose p99 TPOT grows
// with concurrency and then falls off a cliff past 100 (the server gives
// way): the record says the limit with its bracket, the binding term,
// the cliff and each probe, charts each SLO metric with its limit and the
// limit found drawn, the header's key result names the limit, and
// `status --json` says the search's progress.
func TestSearchRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "limit.yaml")
	os.WriteFile(c, []byte(`name: limit
phases:
  - id: limit
    title: the highest concurrency within the SLO
    search:
      axis: concurrency
      range: [1, 512]
      slo: {p99_tpot_ms: "<= 50", error_rate: "<= 0.01"}
      resolution: 10%
    repeat: 3
    steps:
      - run: |
          awk -v c=${concurrency} -v r=$GREENLIGHT_REPEAT 'BEGIN { srand(c * 1000 + r); p = 50 * c / 100.5; if (c > 100) p = p * 3; printf "{\"p99_tpot_ms\": %.4f, \"error_rate\": 0, \"tok_s\": %d}\n", p * (1 + 0.06 * (rand() - 0.5)), 100 * c }' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	rec := string(mustRead(t, filepath.Join(dir, "limit.md")))
	for _, want := range []string{
		"**concurrency 98** is the largest that meets the SLO (p99_tpot_ms <= 50 and error_rate <= 0.01); 108 fails (p99_tpot_ms <= 50, ",
		"the limit lies in [98, 108), 10.2% apart. At 98 the binding term is p99_tpot_ms <= 50, 3.0% inside its limit.",
		"A cliff: from 3.0% inside its limit at 98 to ",
		"11 probes (at most 13), 33 runs",
		"A grid to the same resolution (10.0%) has 52 values.",
		"| 9 | 108 | 3 | ✗ fail | p99_tpot_ms <= 50 |",
		"| limit concurrency 98 (108 fails p99_tpot_ms <= 50) |",
		"![p99_tpot_ms by concurrency](limit.limit.p99_tpot_ms.svg)",
	} {
		if !strings.Contains(rec, want) {
			t.Errorf("the record lacks %q:\n%s", want, rec)
		}
	}
	// Every chart beside the record is one the record embeds.
	charts, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	for _, c := range charts {
		if !strings.Contains(rec, "("+filepath.Base(c)+")") {
			t.Errorf("%s is written and no record embeds it", filepath.Base(c))
		}
	}
	svg := string(mustRead(t, filepath.Join(dir, "limit.limit.p99_tpot_ms.svg")))
	for _, want := range []string{"SLO &lt;= 50", "limit found: concurrency 98"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	out, code := runBin(t, dir, "status", "--json", c)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	var st struct {
		Phases []struct {
			Points struct {
				Skipped, Done, Total int
				NotProbed            int `json:"not_probed"`
				Search               struct {
					Probes, Limit, Above int
					MaxProbes            int `json:"max_probes"`
					Done                 bool
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if s := st.Phases[0].Points.Search; s.Probes != 11 || s.MaxProbes != 13 || s.Limit != 98 || s.Above != 108 || !s.Done {
		t.Errorf("status --json's search: %+v", s)
	}
	// The grid values the search never asked for are not probed, not
	// skipped: skipped means skipped by you.
	if p := st.Phases[0].Points; p.Skipped != 0 || p.NotProbed != p.Total-11 || p.Done != p.Total {
		t.Errorf("status --json's points: %d skipped, %d not probed, %d done of %d; want 0 skipped, %d not probed", p.Skipped, p.NotProbed, p.Done, p.Total, p.Total-11)
	}
	text, _ := runBin(t, dir, "status", c)
	if !regexp.MustCompile(`search: 11 of at most 13 probes: found concurrency 98 \(108 fails p99_tpot_ms <= 50\)`).MatchString(text) {
		t.Errorf("status says:\n%s", text)
	}
}

// TestSearchUnderASweptService: a search under each setting of a swept
// service; the block across the settings ranks them by their limit, with
// brackets, and says which pairs the brackets tell apart.
func TestSearchUnderASweptService(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "svc.yaml")
	os.WriteFile(c, []byte(`name: svc
phases:
  - id: serve
    sweep: {seqs: [32, 64, 65]}
    service:
      run: |
        echo "serving with ${seqs}"; exec sleep 600
      ready: {log: serving, timeout: 30s}
  - id: limit
    needs: [serve]
    search:
      axis: concurrency
      range: [1, 512]
      slo: {p99_tpot_ms: "<= 50"}
    repeat: 3
    steps:
      - run: |
          awk -v c=${concurrency} -v b=$((${seqs} * 3 / 2)) -v r=$GREENLIGHT_REPEAT 'BEGIN { srand(c * 1000 + r); printf "{\"p99_tpot_ms\": %.4f}\n", 50 * c / (b + 0.5) * (1 + 0.02 * (rand() - 0.5)) }' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	rec := string(mustRead(t, filepath.Join(dir, "svc.md")))
	_, block, _ := strings.Cut(rec, "<!-- greenlight:begin across:limit -->")
	block, _, _ = strings.Cut(block, "<!-- greenlight:end")
	rows := regexp.MustCompile(`(?m)^\| (\d) \| seqs=(\d+) \| (\d+) \| \[(\d+), (\d+)\) \|`).FindAllStringSubmatch(block, -1)
	if len(rows) != 3 || rows[2][2] != "32" || rows[0][3] != rows[1][3] {
		t.Fatalf("the ranking's rows %q; want 64 and 65 alike, then 32:\n%s", rows, block)
	}
	for _, want := range []string{"Told apart (the first's limit at or past the value the second failed at): seqs=" + rows[0][2] + " > seqs=32; seqs=" + rows[1][2] + " > seqs=32.",
		"Not told apart at this resolution (their brackets overlap): seqs=" + rows[0][2] + " ~ seqs=" + rows[1][2] + "."} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
}
