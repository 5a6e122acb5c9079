package history

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"gonum.org/v1/gonum/stat"
)

// nightly writes n records of a campaign a day apart under dir: decode at
// c=8, three repeats a night of tokens/s (higher is better) and TPOT
// (lower), 1% night-to-night variation; from night shift on, the driver
// is 590.12 (580.95 before) and tokens/s 3% lower, TPOT 3% higher; a
// prefill metric never moves.
func nightly(t testing.TB, dir string, n, shift int) {
	t.Helper()
	r := rand.New(rand.NewPCG(42, uint64(n)))
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := range n {
		driver, f := "580.95", 1.0
		if i >= shift {
			driver, f = "590.12", 0.97
		}
		night := 1 + 0.01*r.NormFloat64()
		rec := record.Record{Kind: record.KindName, Schema: record.Schema,
			Campaign: record.Campaign{Name: "nightly", File: "nightly.yaml", Report: "nightly.md", State: "finished",
				Started: start.Add(time.Duration(i) * 24 * time.Hour), Written: start.Add(time.Duration(i)*24*time.Hour + time.Hour)},
			Conditions: &conditions.Book{First: conditions.Conditions{Driver: driver, CUDA: "12.8"}, Last: conditions.Conditions{Driver: driver, CUDA: "12.8"}},
			Phases: []record.Phase{{ID: "decode", Status: "done", Axes: []string{"c"}, Repeat: 3,
				Better: map[string]campaign.Direction{"tok_s": campaign.Higher, "tpot_ms": campaign.Lower, "prefill_ms": campaign.Lower}}}}
		for rep := 1; rep <= 3; rep++ {
			noise := 1 + 0.002*r.NormFloat64()
			rec.Rows = append(rec.Rows, record.Row{Phase: "decode", Step: 1, Point: "c=8", Repeat: rep, Time: rec.Campaign.Started,
				Values: map[string]any{"c": 8.0, "tok_s": 1000 * night * f * noise, "tpot_ms": 8 * night / f * noise, "prefill_ms": 120 * (1 + 0.01*r.NormFloat64())}})
		}
		b, _ := json.Marshal(rec)
		sub := filepath.Join(dir, fmt.Sprintf("night%02d", i))
		os.MkdirAll(sub, 0o755)
		os.WriteFile(filepath.Join(sub, "nightly.json"), b, 0o644)
	}
}

// TestHistoryFindsTheDriver: twenty nights, the driver changed at night
// 14: tokens/s and TPOT change there (worse both), prefill does not, and
// the driver is the change ranked first, with the two series that moved.
func TestHistoryFindsTheDriver(t *testing.T) {
	dir := t.TempDir()
	nightly(t, dir, 20, 14)
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"not": "a record"}`), 0o644)
	h, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	h.Analyze(DefaultOptions)
	if len(h.Campaigns) != 20 || len(h.Series) != 3 {
		t.Fatalf("%d campaigns, %d series; want 20 and 3 (tok_s, tpot_ms, prefill_ms: the axis c is no series)", len(h.Campaigns), len(h.Series))
	}
	moved := map[string]Change{}
	for _, c := range h.Changes {
		moved[h.Series[c.Series].Metric] = c
	}
	for m, want := range map[string]string{"tok_s": "worse", "tpot_ms": "worse"} {
		c, ok := moved[m]
		if !ok || c.Campaign < 13 || c.Campaign > 15 || c.Verdict != want || math.Abs(c.ChangePct) < 2 || math.Abs(c.ChangePct) > 5 {
			t.Errorf("%s: %+v; want a 2-5%% change at night 14 (a night either side: 1%% noise), %s", m, c, want)
		}
		if ok && !strings.Contains(strings.Join(append(c.Conditions, c.Near...), ";"), "590.12") {
			t.Errorf("%s's change does not name the driver: %+v", m, c)
		}
	}
	if _, ok := moved["prefill_ms"]; ok || len(h.Changes) != 2 {
		t.Errorf("changes %+v; want tok_s and tpot_ms alone", h.Changes)
	}
	if len(h.Causes) == 0 || !strings.Contains(h.Causes[0].What, "580.95 → 590.12") || h.Causes[0].Moved != 2 {
		t.Errorf("causes %+v; want the driver first, 2 series moved", h.Causes)
	}
	// The page: each moved series with its chart beside it.
	page := filepath.Join(t.TempDir(), "history.md")
	files, err := h.WritePage(page)
	if err != nil || len(files) != 3 {
		t.Fatalf("page: %v, %v; want the page and two charts", err, files)
	}
	md, _ := os.ReadFile(page)
	for _, s := range []string{"## decode c=8 tok_s", "## decode c=8 tpot_ms", "](history.1.svg)", "](history.2.svg)", "| driver 580.95 → 590.12 |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("the page lacks %q:\n%s", s, md)
		}
	}
	if svg, _ := os.ReadFile(files[1]); !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "change +") {
		t.Errorf("the chart %s is no chart of the change", files[1])
	}
	lines := strings.Join(h.Lines(), "\n")
	for _, s := range []string{"20 campaigns", "decode c=8 tok_s: -", "worse; with it: driver 580.95 → 590.12", "  driver 580.95 → 590.12 at ", ": 2 series moved", "1 JSON file(s) that are not greenlight records left out"} {
		if !strings.Contains(lines, s) {
			t.Errorf("the lines lack %q:\n%s", s, lines)
		}
	}
}

// TestExportsReadBack: each export read by its format's own reader.
func TestExportsReadBack(t *testing.T) {
	dir := t.TempDir()
	nightly(t, dir, 6, 3)
	h, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	h.Analyze(DefaultOptions)
	var b bytes.Buffer
	// Otava's CSV: time, commit, a column per series, a row per campaign.
	if err := h.Export(&b, "otava-csv"); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 7 || rows[0][0] != "time" || rows[0][1] != "commit" || len(rows[0]) != 2+len(h.Series) {
		t.Fatalf("otava-csv: %v %q", err, rows)
	}
	if _, err := time.Parse("2006-01-02 15:04:05 -0700", rows[1][0]); err != nil {
		t.Errorf("otava-csv time %q: %v", rows[1][0], err)
	}
	// OpenMetrics: decoded by prometheus/common's OpenMetrics parser, a
	// sample per campaign with its start as the timestamp.
	b.Reset()
	if err := h.Export(&b, "openmetrics"); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	dec := expfmt.NewDecoder(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeOpenMetrics))
	samples := 0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("openmetrics: %v\n%s", err, text)
			}
			break
		}
		for _, m := range mf.Metric {
			samples++
			if m.GetTimestampMs() == 0 {
				t.Errorf("openmetrics: %s has no timestamp", mf.GetName())
			}
		}
	}
	if samples != 6*len(h.Series) {
		t.Errorf("openmetrics: %d samples; want %d\n%s", samples, 6*len(h.Series), text)
	}
	// Parquet: read back by parquet-go, a row per result row and metric.
	b.Reset()
	if err := h.Export(&b, "parquet"); err != nil {
		t.Fatal(err)
	}
	prows, err := parquet.Read[ParquetRow](bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatalf("parquet: %v", err)
	}
	// 6 campaigns × 3 repeats × 4 numbers (c, tok_s, tpot_ms, prefill_ms).
	if len(prows) != 6*3*4 || prows[0].Campaign != "nightly" || prows[0].Started.IsZero() || prows[0].Point != "c=8" {
		t.Errorf("parquet: %d rows, first %+v; want 72", len(prows), prows[0])
	}
	b.Reset()
	// BMF: benchmark -> measure -> value with lower and upper around it.
	b.Reset()
	if err := h.Export(&b, "bmf"); err != nil {
		t.Fatal(err)
	}
	// Bencher's own JSON Schema (https://bencher.dev/bmf.json, in
	// testdata as Bencher publishes it).
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("testdata/bmf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("bmf against Bencher's schema: %v\n%s", err, b.String())
	}
	var bmf map[string]map[string]struct {
		Value float64  `json:"value"`
		Lower *float64 `json:"lower_value"`
		Upper *float64 `json:"upper_value"`
	}
	dj := json.NewDecoder(&b)
	dj.DisallowUnknownFields()
	if err := dj.Decode(&bmf); err != nil {
		t.Fatal(err)
	}
	v, ok := bmf["decode c=8"]["tok_s"]
	if !ok || v.Lower == nil || v.Upper == nil || !(*v.Lower < v.Value && v.Value < *v.Upper) {
		t.Errorf("bmf: %+v", bmf)
	}
}

// BenchmarkHistory: the cost of a history grows with its campaigns
// linearly (each record read once, its measures kept, never its rows; a
// series' change points window by window).
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			nightly(b, dir, n, n/2)
			b.ResetTimer()
			for range b.N {
				h, err := Load([]string{dir})
				if err != nil {
					b.Fatal(err)
				}
				h.Analyze(DefaultOptions)
			}
		})
	}
}

// TestHistoryBadInput: two records that started at once are ordered by
// their paths and said; a metric whose direction changed is judged by
// the newest and said; a phase renamed is said as two series; a record
// cut short is left out with why, the others read.
func TestHistoryBadInput(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	write := func(name string, day int, phase string, better campaign.Direction, v float64) {
		rec := record.Record{Kind: record.KindName, Schema: record.Schema,
			Campaign: record.Campaign{Name: "n", File: "n.yaml", Report: "n.md", State: "finished", Started: start.Add(time.Duration(day) * 24 * time.Hour)},
			Phases:   []record.Phase{{ID: phase, Status: "done", Better: map[string]campaign.Direction{"ms": better}}},
			Rows:     []record.Row{{Phase: phase, Step: 1, Values: map[string]any{"ms": v}}}}
		b, _ := json.Marshal(rec)
		os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644)
	}
	write("a", 0, "gemm", campaign.Lower, 10)
	write("b", 1, "gemm", campaign.Lower, 10.1)
	write("c", 1, "gemm", campaign.Higher, 9.9) // the same start as b
	write("d", 2, "matmul", campaign.Higher, 10)
	write("e", 3, "matmul", campaign.Higher, 10.2)
	os.WriteFile(filepath.Join(dir, "f.json"), []byte(`{"kind": "greenlight-results", "schema": 3, "campaign": {"name": "cut`), 0o644)
	h, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	said := strings.Join(h.Said, "\n")
	for _, want := range []string{
		"b.json and " + filepath.Join(dir, "c.json") + " started at the same time",
		"gemm ms: better lower up to " + filepath.Join(dir, "c.json") + ", higher from it on: judged by the newest",
		"gemm ms ends at " + filepath.Join(dir, "c.json") + " and matmul ms begins at the next campaign",
		"f.json: a greenlight record cut short",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("said lacks %q:\n%s", want, said)
		}
	}
	if len(h.Campaigns) != 5 || h.Campaigns[1].Path != filepath.Join(dir, "b.json") || h.Campaigns[2].Path != filepath.Join(dir, "c.json") {
		t.Errorf("campaigns %+v; want a, b, c, d, e (b before c by path)", h.Campaigns)
	}
}

// TestParquetByPyarrow: the Parquet export read by pyarrow, where Python
// has it (skipped, said, where not).
func TestParquetByPyarrow(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyarrow.parquet").Run(); err != nil {
		t.Skip("python3 with pyarrow is not on this machine: the export is read back by parquet-go alone (TestExportsReadBack)")
	}
	dir := t.TempDir()
	nightly(t, dir, 4, 2)
	h, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "h.parquet")
	f, _ := os.Create(path)
	if err := h.Export(f, "parquet"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("python3", "-c", "import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]); print(t.num_rows, ','.join(t.column_names))", path).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "48 campaign,record,started,commit,phase,step,point,repeat,time,metric,value,stamp") {
		t.Errorf("pyarrow: %v: %s", err, out)
	}
}

// TestChangeInterval: a change's 95% interval is Welch's over the two
// sides' campaign means, checked by hand (the sample variances, Welch's
// degrees of freedom, Student's quantile from its table: t(0.975, 3.23)
// ≈ 3.09, between 3.18 at 3 and 2.78 at 4); a side of one campaign gives
// none.
func TestChangeInterval(t *testing.T) {
	before, after := []float64{100, 101, 99, 100, 100}, []float64{110, 111, 109}
	m1, s1 := stat.PopMeanStdDev(before, nil)
	m2, s2 := stat.PopMeanStdDev(after, nil)
	c := Change{Mean1: m1, Mean2: m2, Std1: s1, Std2: s2, N1: len(before), N2: len(after)}
	lo, hi := changeInterval(c)
	v1, v2 := stat.Variance(before, nil)/5, stat.Variance(after, nil)/3 // 0.1 and 1/3
	se := math.Sqrt(v1 + v2)
	df := (v1 + v2) * (v1 + v2) / (v1*v1/4 + v2*v2/2)
	if math.Abs(df-3.234) > 0.001 { // 0.4333² / (0.1²/4 + 0.3333²/2)
		t.Fatalf("Welch's df %v; want 3.234 by hand", df)
	}
	tq := 3.09 // Student's t, 0.975, 3.23 degrees of freedom, from its table
	if want := 100 * (10 - tq*se) / 100; math.Abs(lo-want) > 0.1 {
		t.Errorf("low %v%%; want %v%% (10 − %v × %v)", lo, want, tq, se)
	}
	if want := 100 * (10 + tq*se) / 100; math.Abs(hi-want) > 0.1 {
		t.Errorf("high %v%%; want %v%%", hi, want)
	}
	c.N2 = 1
	if lo, hi := changeInterval(c); lo != 0 || hi != 0 {
		t.Errorf("one campaign after: [%v, %v]; want none", lo, hi)
	}
}
