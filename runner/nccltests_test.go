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
	if strings.Join(cols[4], ",") != strings.Join(ncclCols, ",") {
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
	if len(rows) != 6 || len(problems) != 0 || len(cols[0]) != len(ncclCols)-1 || cols[0][4] != "oop_time_us" {
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
