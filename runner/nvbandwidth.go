package runner

import (
	"github.com/greenlight-run/greenlight/runner/campaign"

	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// nvbandwidth's JSON (`nvbandwidth -j`), read at the step's end from its
// log: each test case's matrix as rows of test, row, column, source and
// destination (from its description's arrow: "GPU(row) <- GPU(column)" is
// read by the row's device from the column's), and GB/s. "N/A" (the
// diagonal) is no row. A test case not passed, an error, a matrix cell
// that is no number, or no JSON at all is said.

// nvbwDoc is the JSON as nvbandwidth writes it.
type nvbwDoc struct {
	NVBandwidth struct {
		Error     string `json:"error"`
		Warning   string `json:"warning"`
		Testcases []struct {
			Name        string     `json:"name"`
			Status      string     `json:"status"`
			Error       string     `json:"error"`
			Description string     `json:"bandwidth_description"`
			Matrix      [][]string `json:"bandwidth_matrix"`
		} `json:"testcases"`
	} `json:"nvbandwidth"`
}

// nvbwMax bounds the log nvbandwidth's JSON is looked for in.
const nvbwMax = 64 << 20

// parseNVBandwidth finds nvbandwidth's JSON in out and reads its rows.
func parseNVBandwidth(out []byte) (rows [][]any, problems []string) {
	at := bytes.Index(out, []byte(`"nvbandwidth"`))
	if at < 0 {
		return nil, []string{"no nvbandwidth JSON in its output (run it with -j)"}
	}
	start := bytes.LastIndexByte(out[:at], '{')
	if start < 0 {
		return nil, []string{"no nvbandwidth JSON in its output (run it with -j)"}
	}
	var doc nvbwDoc
	if err := json.NewDecoder(bytes.NewReader(out[start:])).Decode(&doc); err != nil {
		line := bytes.Count(out[:start], []byte("\n")) + 1
		return nil, []string{fmt.Sprintf("its JSON, from line %d, does not read: %v (cut short?)", line, err)}
	}
	nb := doc.NVBandwidth
	if nb.Error != "" {
		problems = append(problems, "nvbandwidth says: "+nb.Error)
	}
	if nb.Warning != "" {
		problems = append(problems, "nvbandwidth warns: "+nb.Warning)
	}
	for _, tc := range nb.Testcases {
		if tc.Status != "" && tc.Status != "Passed" {
			p := fmt.Sprintf("%s: %s", tc.Name, tc.Status)
			if tc.Error != "" {
				p += ": " + tc.Error
			}
			problems = append(problems, p)
		}
		readsFrom := strings.Contains(tc.Description, "<-") // the row's device reads from the column's
		for i, r := range tc.Matrix {
			for j, cell := range r {
				if cell == "N/A" || strings.TrimSpace(cell) == "" {
					continue
				}
				v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					problems = append(problems, fmt.Sprintf("%s: row %d, column %d: %q is no number", tc.Name, i, j, cell))
					continue
				}
				src, dst := i, j
				if readsFrom {
					src, dst = j, i
				}
				rows = append(rows, []any{tc.Name, float64(i), float64(j), float64(src), float64(dst), v})
			}
		}
	}
	return rows, problems
}

// nvbwCols are a matrix cell's row's columns.
var nvbwCols = campaign.NVBandwidthColumns

// readNVBandwidth, at the step's end, adds its matrices' rows; say: the
// problems are said (the live end; a runner reading back an ended step
// has said them already).
func (sr *stepRun) readNVBandwidth(now time.Time, say bool) {
	f, err := os.Open(sr.files.log)
	if err != nil {
		return
	}
	defer f.Close()
	out, _ := io.ReadAll(io.LimitReader(f, nvbwMax))
	rows, problems := parseNVBandwidth(out)
	for _, v := range rows {
		sr.addRow(Row{Phase: sr.pr.ph.ID, Step: sr.step.Index, Time: now, Cols: nvbwCols, Values: v}, false)
	}
	if say {
		for _, p := range problems[:min(len(problems), 20)] {
			sr.r.warn(fmt.Sprintf("%s: step %d's nvbandwidth output: %s", sr.pr.ph.Label(), sr.step.Index+1, p))
		}
	}
}
