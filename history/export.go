package history

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/greenlight-run/greenlight/record"
)

// The exports, each in its format's own shape, so the tools people
// already run read a history: Otava's CSV (a row per campaign: its time,
// its commit, a column per series), Bencher's BMF JSON (one campaign:
// each series' value with its 95% interval as lower and upper),
// OpenMetrics text with timestamps (a series per metric, the phase and
// the point's axes as labels, a sample per campaign at its start), and
// Parquet (parquet-go: a row per result row and metric of every
// campaign, with its point, repeat, stamp and GPU facts, for DuckDB and
// pandas).

// Formats are the exports' names.
var Formats = []string{"otava-csv", "bmf", "openmetrics", "parquet"}

// Export writes the history in format to w.
func (h *History) Export(w io.Writer, format string) error {
	switch format {
	case "otava-csv":
		return h.otavaCSV(w)
	case "bmf":
		return h.bmf(w, len(h.Campaigns)-1)
	case "openmetrics":
		return h.openMetrics(w)
	case "parquet":
		return h.parquet(w)
	}
	return fmt.Errorf("no export %q: %s", format, strings.Join(Formats, ", "))
}

// otavaCSV is Otava's CSV: time, commit, then a column per series.
func (h *History) otavaCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"time", "commit"}
	for _, s := range h.Series {
		head = append(head, s.Name())
	}
	cw.Write(head)
	rows := make([][]string, len(h.Campaigns))
	for i, c := range h.Campaigns {
		rows[i] = make([]string, len(head))
		rows[i][0], rows[i][1] = c.Started.Format("2006-01-02 15:04:05 -0700"), c.Commit
	}
	for si, s := range h.Series {
		for _, v := range s.Values {
			rows[v.Campaign][2+si] = strconv.FormatFloat(v.Mean, 'g', -1, 64)
		}
	}
	cw.WriteAll(rows)
	return cw.Error()
}

// bmf is Bencher's Metric Format for campaign i: a benchmark per phase
// and point, a measure per metric, its value the mean of the runs with
// their 95% t-interval as lower and upper where there are repeats.
func (h *History) bmf(w io.Writer, i int) error {
	type value struct {
		Value float64  `json:"value"`
		Lower *float64 `json:"lower_value,omitempty"`
		Upper *float64 `json:"upper_value,omitempty"`
	}
	out := map[string]map[string]value{}
	for _, s := range h.Series {
		for _, v := range s.Values {
			if v.Campaign != i || math.IsNaN(v.Mean) || math.IsInf(v.Mean, 0) {
				continue
			}
			bench := strings.TrimSpace(s.Phase + " " + s.Point)
			if out[bench] == nil {
				out[bench] = map[string]value{}
			}
			bv := value{Value: v.Mean}
			if v.N >= 2 {
				lo, hi := v.Mean-v.Half, v.Mean+v.Half
				bv.Lower, bv.Upper = &lo, &hi
			}
			out[bench][s.Metric] = bv
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// openMetrics is the history as OpenMetrics: a gauge family per metric,
// a series per phase and point, a sample per campaign at its start.
func (h *History) openMetrics(w io.Writer) error {
	families := map[string]*dto.MetricFamily{}
	var order []string
	for _, s := range h.Series {
		name := "greenlight_" + promName(s.Metric)
		f := families[name]
		if f == nil {
			f = &dto.MetricFamily{Name: proto.String(name), Help: proto.String("greenlight's " + s.Metric + ", a campaign's mean"), Type: dto.MetricType_GAUGE.Enum()}
			families[name] = f
			order = append(order, name)
		}
		labels := []*dto.LabelPair{{Name: proto.String("phase"), Value: proto.String(s.Phase)}}
		if s.Point != "" {
			labels = append(labels, &dto.LabelPair{Name: proto.String("point"), Value: proto.String(s.Point)})
			for _, kv := range strings.Split(s.Point, ",") {
				k, v, ok := strings.Cut(kv, "=")
				if ok && labelName.MatchString(k) && k != "phase" && k != "point" {
					labels = append(labels, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v)})
				}
			}
		}
		for _, v := range s.Values {
			if math.IsNaN(v.Mean) {
				continue
			}
			f.Metric = append(f.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(v.Mean)},
				TimestampMs: proto.Int64(h.Campaigns[v.Campaign].Started.UnixMilli())})
		}
	}
	for _, name := range order {
		if _, err := expfmt.MetricFamilyToOpenMetrics(w, families[name]); err != nil {
			return err
		}
	}
	_, err := expfmt.FinalizeOpenMetrics(w)
	return err
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// promName is a metric's name as Prometheus spells one: [a-zA-Z0-9_],
// per-second as _per_s ("tok/s": tok_per_s).
func promName(m string) string {
	m = strings.ReplaceAll(m, "/", "_per_")
	var b strings.Builder
	for _, r := range m {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ParquetRow is one value of one result row of one campaign.
type ParquetRow struct {
	Campaign string    `parquet:"campaign"`
	Record   string    `parquet:"record"`
	Started  time.Time `parquet:"started,timestamp(millisecond)"`
	Commit   string    `parquet:"commit"`
	Phase    string    `parquet:"phase"`
	Step     int32     `parquet:"step"`
	Point    string    `parquet:"point"`
	Repeat   int32     `parquet:"repeat"`
	Time     time.Time `parquet:"time,timestamp(millisecond)"`
	Metric   string    `parquet:"metric"`
	Value    float64   `parquet:"value"`
	Stamp    string    `parquet:"stamp"` // why the row was taken under bad conditions; "" when it was not
	PowerW   float64   `parquet:"gpu_power_w,optional"`
	EnergyWh float64   `parquet:"gpu_energy_wh,optional"`
	SMMHz    float64   `parquet:"gpu_sm_mhz,optional"`
}

// parquet streams every campaign's rows again, in campaign order: one
// record's rows in memory at a time, never the history's.
func (h *History) parquet(w io.Writer) error {
	pw := parquet.NewGenericWriter[ParquetRow](w)
	for _, c := range h.Campaigns {
		var batch []ParquetRow
		_, err := record.Stream(c.Path, func(row record.Row) error {
			names := make([]string, 0, len(row.Values))
			for m := range row.Values {
				names = append(names, m)
			}
			slices.Sort(names)
			for _, m := range names {
				f, ok := row.Values[m].(float64)
				if !ok {
					continue
				}
				pr := ParquetRow{Campaign: c.Name, Record: c.Path, Started: c.Started, Commit: c.Commit, Phase: row.Phase, Step: int32(row.Step),
					Point: row.Point, Repeat: int32(row.Repeat), Time: row.Time, Metric: m, Value: f, Stamp: strings.Join(row.Stamp, "; ")}
				if g := row.GPU; g != nil {
					pr.PowerW, pr.EnergyWh, pr.SMMHz = g.PowerW, g.EnergyWh, g.SMClockMHz
				}
				batch = append(batch, pr)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := pw.Write(batch); err != nil {
			return err
		}
	}
	return pw.Close()
}
