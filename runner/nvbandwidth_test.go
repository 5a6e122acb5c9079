package runner

import (
	"os"
	"strings"
	"testing"
)

// TestNVBandwidthMatrices: nvbandwidth's JSON (its own format: matrices
// of strings, N/A on the diagonal) is a row a cell with its source and
// destination by the description's arrow; a test case waived is said.
func TestNVBandwidthMatrices(t *testing.T) {
	b, err := os.ReadFile("testdata/nvbandwidth.json")
	if err != nil {
		t.Fatal(err)
	}
	rows, problems := parseNVBandwidth(b)
	if len(rows) != 4 {
		t.Fatalf("%d rows; want 4 (two tests of two GPUs, no diagonal): %v", len(rows), rows)
	}
	// Read: GPU(row) <- GPU(column): row 0, column 1 is GPU 0 reading from 1.
	if r := rows[0]; r[0] != "device_to_device_memcpy_read_ce" || r[1] != 0.0 || r[2] != 1.0 || r[3] != 1.0 || r[4] != 0.0 || r[5] != 52.31 {
		t.Errorf("read row %v; want src 1, dst 0, 52.31", r)
	}
	// Write: GPU(row) -> GPU(column): row 0, column 1 is GPU 0 writing to 1.
	if r := rows[2]; r[3] != 0.0 || r[4] != 1.0 || r[5] != 7.12 {
		t.Errorf("write row %v; want src 0, dst 1, 7.12", r)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "device_to_device_bidirectional_memcpy_read_ce: Waived") {
		t.Errorf("problems %q; want the waived test said", problems)
	}
}

// TestNVBandwidthHostile: JSON cut mid-matrix, a cell that is no number,
// no JSON at all: each said, the good cells kept.
func TestNVBandwidthHostile(t *testing.T) {
	b, _ := os.ReadFile("testdata/nvbandwidth.json")
	full := string(b)
	cut := full[:strings.Index(full, `"51.90"`)]
	if rows, problems := parseNVBandwidth([]byte(cut)); len(rows) != 0 || len(problems) != 1 || !strings.Contains(problems[0], "from line 4, does not read") {
		t.Errorf("cut: %d rows, %q", len(rows), problems)
	}
	nan := strings.Replace(full, `"7.12"`, `"nan"`, 1)
	if rows, problems := parseNVBandwidth([]byte(nan)); len(rows) != 3 || !strings.Contains(strings.Join(problems, "|"), `device_to_device_memcpy_write_ce: row 0, column 1: "nan" is no number`) {
		t.Errorf("nan: %d rows, %q", len(rows), problems)
	}
	if _, problems := parseNVBandwidth([]byte("Device 0: NVIDIA H100\n")); len(problems) != 1 || !strings.Contains(problems[0], "run it with -j") {
		t.Errorf("no JSON: %q", problems)
	}
}
