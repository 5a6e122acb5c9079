package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func readNCCL(t *testing.T, text string) (rows [][]any, cols [][]string, problems []string) {
	t.Helper()
	var n ncclTests
	for _, line := range strings.Split(text, "\n") {
		if c, v, ok := n.line([]byte(line)); ok {
			rows, cols = append(rows, v), append(cols, c)
		}
	}
	return rows, cols, n.end()
}

// TestNCCLTestsTable: all_reduce_perf's table (nccl-tests' own format: a
// row a size, out-of-place and in-place) is a row a size and one of the
// average bus bandwidth, nothing said wrong.
func TestNCCLTestsTable(t *testing.T) {
	b, err := os.ReadFile("testdata/all_reduce_perf.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows, cols, problems := readNCCL(t, string(b))
	if len(rows) != 6 || len(problems) != 0 {
		t.Fatalf("%d rows, problems %q; want 6 (5 sizes and the average), none", len(rows), problems)
	}
	if strings.Join(cols[4], ",") != strings.Join(append(slices.Clone(ncclCols), "ranks"), ",") {
		t.Errorf("columns %v", cols[4])
	}
	big := rows[4]
	if big[0] != 134217728.0 || big[2] != "float" || big[3] != "sum" || big[5] != 1052.3 || big[7] != 127.55 || big[11] != 127.85 {
		t.Errorf("the 128 MiB row %v", big)
	}
	if cols[5][0] != "avg_busbw_gbs" || rows[5][0] != 33.4011 {
		t.Errorf("the summary row %v %v", cols[5], rows[5])
	}
}

// TestNCCLTestsSayTheirGPUs: a table says the GPU count it ran on (its
// "# Rank" lines, else nThread × nGpus) and its collective, so a capture
// is held against the curve of its own GPU count; a table without a
// header is told by its numbers: an all-reduce (a sum, no root, count ×
// type bytes) of n GPUs has busbw = algbw × 2(n−1)/n.
func TestNCCLTestsSayTheirGPUs(t *testing.T) {
	b, _ := os.ReadFile("testdata/all_reduce_perf.txt")
	full := string(b)
	asMap := func(cols []string, vals []any) map[string]any {
		m := map[string]any{}
		for i, c := range cols {
			m[c] = vals[i]
		}
		return m
	}
	rows, cols, _ := readNCCL(t, full)
	if c, g, basis := NCCLCollective(asMap(cols[4], rows[4])); c != "all_reduce" || g != 2 || basis == "" {
		t.Errorf("the 2-GPU table: %q on %d GPUs (%s); want all_reduce on 2", c, g, basis)
	}
	// An MPI run of 8 processes, one GPU each: nGpus 1, eight rank lines.
	eight := "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
	for r := range 8 {
		eight += fmt.Sprintf("#  Rank  %d Group  0 Pid  %d on box device  %d [0x1b] NVIDIA RTX PRO 6000 Blackwell Server Edition\n", r, 100+r, r)
	}
	eight += strings.Join(strings.Split(full, "\n")[5:], "\n")
	rows, cols, _ = readNCCL(t, eight)
	if c, g, _ := NCCLCollective(asMap(cols[4], rows[4])); c != "all_reduce" || g != 8 {
		t.Errorf("8 ranks of MPI: %q on %d GPUs; want all_reduce on 8", c, g)
	}
	// No header: a row of 8 GPUs told by its numbers (busbw 1.75 × algbw).
	bare := map[string]any{"size_b": 1048576.0, "count": 262144.0, "type": "float", "redop": "sum", "root": -1.0, "oop_algbw_gbs": 20.0, "oop_busbw_gbs": 35.0}
	if c, g, basis := NCCLCollective(bare); c != "all_reduce" || g != 8 || !strings.Contains(basis, "numbers") {
		t.Errorf("an 8-GPU row without a header: %q on %d (%s)", c, g, basis)
	}
	// A reduce-scatter (busbw below algbw), an all-gather (no sum), a
	// small message whose bandwidths are 0.00: not an all-reduce's curve,
	// or no GPU count to tell.
	for _, row := range []map[string]any{
		{"size_b": 1048576.0, "count": 32768.0, "type": "float", "redop": "sum", "root": -1.0, "oop_algbw_gbs": 20.0, "oop_busbw_gbs": 17.5},
		{"size_b": 1048576.0, "count": 32768.0, "type": "float", "redop": "none", "root": -1.0, "oop_algbw_gbs": 20.0, "oop_busbw_gbs": 17.5},
		{"size_b": 8.0, "count": 2.0, "type": "float", "redop": "sum", "root": -1.0, "oop_algbw_gbs": 0.0, "oop_busbw_gbs": 0.0},
	} {
		if c, g, _ := NCCLCollective(row); c == "all_reduce" && g > 0 {
			t.Errorf("%v: told all_reduce on %d GPUs", row, g)
		}
	}
}

// TestNCCLTestsHostile: a table cut short, #wrong above 0, a NaN, a
// 10 MB line, an older build without the root column: each said at its
// line, the good rows kept.
func TestNCCLTestsHostile(t *testing.T) {
	b, _ := os.ReadFile("testdata/all_reduce_perf.txt")
	full := string(b)
	lines := strings.Split(full, "\n")
	cut := strings.Join(lines[:12], "\n") // three rows, no summary
	rows, _, problems := readNCCL(t, cut)
	if len(rows) != 3 || len(problems) != 1 || !strings.Contains(problems[0], "without its \"# Avg bus bandwidth\" line: cut short") {
		t.Errorf("cut: %d rows, %q", len(rows), problems)
	}
	wrong := strings.Replace(full, "28.72   36.51   36.51      0", "28.72   36.51   36.51      3", 1)
	rows, _, problems = readNCCL(t, wrong)
	if len(rows) != 6 || len(problems) != 1 || !strings.Contains(problems[0], "line 13: oop_wrong at 1048576 bytes: 3 wrong values") {
		t.Errorf("#wrong: %d rows, %q", len(rows), problems)
	}
	nan := strings.Replace(full, "13.41    4.89", "nan    4.89", 1)
	rows, _, problems = readNCCL(t, nan)
	if len(rows) != 5 || len(problems) != 1 || !strings.Contains(problems[0], `line 12: oop_time_us "nan" is no number`) {
		t.Errorf("NaN: %d rows, %q", len(rows), problems)
	}
	huge := strings.Replace(full, "       65536", string(bytes.Repeat([]byte("9"), 10<<20))+"       65536", 1)
	rows, _, problems = readNCCL(t, huge)
	if len(rows) != 5 || len(problems) != 1 || !strings.Contains(problems[0], "line 12: a line of 10485") {
		t.Errorf("10 MB line: %d rows, %q", len(rows), problems)
	}
	old := strings.ReplaceAll(strings.ReplaceAll(full, "   redop    root ", "   redop "), "     sum      -1 ", "     sum ")
	rows, cols, problems := readNCCL(t, old)
	if len(rows) != 6 || len(problems) != 0 || len(cols[0]) != len(ncclCols) || cols[0][4] != "oop_time_us" {
		t.Errorf("no root column: %d rows, cols %v, %q", len(rows), cols[0], problems)
	}
	if _, _, problems := readNCCL(t, "hello\nworld\n"); len(problems) != 1 || !strings.Contains(problems[0], "no nccl-tests table") {
		t.Errorf("no table: %q", problems)
	}
}

// TestNCCLTestsInACampaign: a step with results: {format: nccl-tests}
// records a row a size and the average; one whose table is cut says so,
// with its line, among the warnings.
func TestNCCLTestsInACampaign(t *testing.T) {
	t.Parallel()
	fixture, _ := filepath.Abs("testdata/all_reduce_perf.txt")
	p := loadCampaign(t, fmt.Sprintf(`
name: ar
phases:
  - id: whole
    gpus: none
    steps:
      - results: {format: nccl-tests}
        run: |
          cat %[1]s
  - id: cut
    gpus: none
    steps:
      - results: {format: nccl-tests}
        run: |
          head -12 %[1]s
`, fixture))
	h := start(t, p, testOptions(t))
	st := h.finished(20 * time.Second)
	if n := len(st.Phase("whole").Steps[0].Results); n != 6 {
		t.Errorf("whole: %d rows; want 6", n)
	}
	if n := len(st.Phase("cut").Steps[0].Results); n != 3 {
		t.Errorf("cut: %d rows; want 3", n)
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool {
		return strings.Contains(w, "cut: step 1's nccl-tests output, the table ends at line 12 without its")
	}) {
		t.Errorf("the cut table is not said: %q", st.Warnings)
	}
}
