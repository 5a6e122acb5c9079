// Package record is the campaign's machine-readable record, NAME.json
// beside the results file NAME.md: every result row with its phase,
// point, repeat, values, time and validity stamp; each phase's status and
// times; the conditions the campaign ran under. It is what comparisons
// read (package compare), never the markdown. Its schema is versioned; a
// reader refuses a version it does not know and fields it does not know,
// so that a change of meaning is never read as the old one.
//
// record imports conditions, runner/campaign and trace (the
// captures' type, a leaf), nothing above them.
package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/trace"
)

// Schema is the version of the record's format this greenlight
// writes; it reads it and every version since MinSchema (2 added each
// phase's results model, Phase.Results: a schema 1 record has none; 3
// added each row's GPU facts, Row.GPU). The JSON Schema of each is
// schema/record.schema.json.
const (
	Schema    = 3
	MinSchema = 1
)

// KindName marks a file as a greenlight record.
const KindName = "greenlight-results"

// Record is the whole campaign as data.
type Record struct {
	Kind       string           `json:"kind"`   // KindName
	Schema     int              `json:"schema"` // Schema
	Campaign   Campaign         `json:"campaign"`
	Conditions *conditions.Book `json:"conditions,omitempty"`
	Phases     []Phase          `json:"phases"`
	Rows       []Row            `json:"rows"`
}

// Campaign is the campaign's identity and where it stands.
type Campaign struct {
	Name    string    `json:"name"`
	File    string    `json:"file"`   // the campaign file
	Report  string    `json:"report"` // the results file this record is beside
	State   string    `json:"state"`  // running, paused, frozen, stopped, finished, failed
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"` // zero while it runs
	Written time.Time `json:"written"`
}

// Phase is one phase: its status and times, its grid, and which
// way its metrics are better.
type Phase struct {
	ID      string                        `json:"id"`
	Title   string                        `json:"title,omitempty"`
	Status  string                        `json:"status"`
	Reason  string                        `json:"reason,omitempty"`
	Attempt int                           `json:"attempt,omitempty"`
	Started time.Time                     `json:"started,omitzero"`
	Ended   time.Time                     `json:"ended,omitzero"`
	Axes    []string                      `json:"axes,omitempty"`    // a sweep's axes, in order
	Repeat  int                           `json:"repeat,omitempty"`  // runs of each point at most (a grid's; a search's are in Results)
	Better  map[string]campaign.Direction `json:"better,omitempty"`  // metric: higher or lower
	Metrics []string                      `json:"metrics,omitempty"` // the metrics it is about (none: every numeric column)
	Noise   float64                       `json:"noise,omitempty"`   // a sweep's noise limit (coefficient of variation)
	// Model is the phase's results model (package results): each point's
	// state, runs, stats and verdicts, a search's result. The same value
	// status --json gives. Schema 2 on.
	Model *results.Phase `json:"model,omitempty"`
	// Captures are its profiler traces as kernel families, one a step's
	// run that made them: what a trace diff compares (compare).
	Captures []trace.Capture `json:"captures,omitempty"`
	// Roofline is each point of a phase with roofline: against the
	// board's roofline (report/roofline.go).
	Roofline *Roofline `json:"roofline,omitempty"`
	// Floor is a decode phase's points against the floor of a step's
	// reads (report/floor.go).
	Floor *Floor `json:"floor,omitempty"`
}

// Floor is a decode phase's points against the floor under a decode
// step: the bytes the model's config says a step reads at the point's
// batch, over the GPUs' bandwidth.
type Floor struct {
	Model   string       `json:"model"`
	GPUs    int          `json:"gpus"`
	Board   string       `json:"board,omitempty"`
	GBs     float64      `json:"gbs_per_gpu,omitempty"`
	Basis   string       `json:"gbs_basis,omitempty"` // measured (a roofline phase's best point), or the board's spec
	Points  []FloorPoint `json:"points"`
	Terms   []FloorTerm  `json:"terms,omitempty"` // the byte model at the largest batch
	Batch   int          `json:"terms_batch,omitempty"`
	Context int          `json:"terms_context,omitempty"`
	Unknown string       `json:"unknown,omitempty"` // why there is no floor
	// Verdict: the rows' bounds in one line, which batches each holds at
	// (report/budget.go); "" when no row has one.
	Verdict string `json:"verdict,omitempty"`
	// AllReduce is vLLM's own choice of all-reduce for the serving
	// service ("custom all-reduce off, ..."): its words turning custom
	// all-reduce off, or that none did.
	AllReduce string `json:"all_reduce_choice,omitempty"`
}

// FloorPoint is one point's time per output token against its floor.
type FloorPoint struct {
	Point   string  `json:"point"`
	Runs    int     `json:"runs"`
	Batch   int     `json:"batch"`
	Context int     `json:"context"`
	TPOTms  float64 `json:"tpot_ms"`
	FloorMs float64 `json:"floor_ms"`
	Pct     float64 `json:"floor_pct"` // the floor's share of the TPOT
	Budget  *Budget `json:"budget,omitempty"`
}

// Budget is a decode row's time per output token, term by term: the
// floor, the all-reduce the campaign's own curve predicts (or why it is
// not known), and what is left; its bound and the verdict in words.
type Budget struct {
	TPOTms           float64        `json:"tpot_ms"`
	FloorMs          float64        `json:"floor_ms"`
	AllReduce        *AllReduceTerm `json:"all_reduce,omitempty"`
	AllReduceUnknown string         `json:"all_reduce_unknown,omitempty"`
	RestMs           float64        `json:"rest_ms"` // TPOT less the terms known; below 0 when they add to more
	RestBasis        string         `json:"rest_basis"`
	Bound            string         `json:"bound,omitempty"` // all-reduce latency, all-reduce bandwidth, not the all-reduce; "" when not told
	// Traced: a capture at this batch on the same server, its all-reduce
	// kernels' time a profiler step beside the prediction.
	Traced *TracedAllReduce `json:"traced,omitempty"`
	// Captured: a capture at this batch on the same server whose trace
	// marks profiler steps splits the rest: the GPU busy beyond the floor
	// and the all-reduce (GEMMs above their floor, attention, the other
	// kernels), and the GPU idle between kernels (host, launches).
	Captured *CapturedStep `json:"captured,omitempty"`
	// GEMM: the model's GEMMs' time a step above their floor, where a
	// roofline phase measured their shapes at the row's batch;
	// GEMMUnknown says why there is none.
	GEMM        *GEMMTerm `json:"gemm_excess,omitempty"`
	GEMMUnknown string    `json:"gemm_excess_unknown,omitempty"`
	Verdict     string    `json:"verdict"`
}

// GEMMTerm is the GEMMs' excess over their floor in a decode step: each
// of the model's GEMM shapes (one GPU's shard) a roofline phase measured
// at M = the row's batch, its time a call less its bytes over the floor's
// bandwidth, times its calls a step. Missing are the model's shapes it
// did not measure (and the step's parts that are no plain GEMM): their
// excess stays in the rest.
type GEMMTerm struct {
	Ms      float64     `json:"ms"`
	Phases  []string    `json:"phases"` // the roofline phases measured in
	Shapes  []GEMMShape `json:"shapes"`
	Missing []string    `json:"missing,omitempty"`
	Basis   string      `json:"basis"`
}

// GEMMShape is one of the model's GEMMs as a roofline phase measured it.
type GEMMShape struct {
	Name     string  `json:"name"`
	M        int     `json:"m"`
	N        int     `json:"n"`
	K        int     `json:"k"`
	Calls    int     `json:"calls"`     // a step
	US       float64 `json:"us"`        // measured, a call: the mean over its runs
	FloorUS  float64 `json:"floor_us"`  // its bytes over the floor's bandwidth
	ExcessUS float64 `json:"excess_us"` // US − FloorUS
	Runs     int     `json:"runs"`
}

// CapturedStep is a decode step as a capture's trace saw it (the median
// profiler step's span on the GPU's timeline, the mean over the ranks),
// and the rest of the token's time split by it.
type CapturedStep struct {
	Phase   string  `json:"phase"`
	Ranks   int     `json:"ranks"`
	StepMs  float64 `json:"step_ms"`  // the median profiler step's span
	BusyMs  float64 `json:"busy_ms"`  // GPU activity in it (the union of kernels and copies)
	IdleMs  float64 `json:"idle_ms"`  // the span less the busy: host, launches, waits between kernels
	OtherMs float64 `json:"other_ms"` // the busy less the floor and the all-reduce (traced, else predicted): GEMMs above their floor, attention, the rest of the kernels
	GapPct  float64 `json:"gap_pct"`  // (step − TPOT) / TPOT × 100: how far the capture's step is from the row's token time
	// Splits: the step within 10% of the TPOT, so it splits the row's
	// rest; false, its figures stand beside the row, not in its terms
	// (the profiler's overhead, or another setting than the row's).
	Splits bool   `json:"splits"`
	Basis  string `json:"basis"`
}

// TracedAllReduce is a capture's all-reduce a step against the predicted
// term: the gap, and past 20% what may explain it.
type TracedAllReduce struct {
	Phase  string  `json:"phase"`
	Ms     float64 `json:"ms"`      // a profiler step's all-reduce kernels, the mean over the ranks
	GapPct float64 `json:"gap_pct"` // (traced − predicted) / predicted × 100
	Words  string  `json:"words,omitempty"`
}

// AllReduceTerm is a decode step's all-reduce, predicted from an
// all_reduce_perf curve: its calls, each call's message and time, split
// into the curve's small-message time (latency) and the rest (bandwidth).
type AllReduceTerm struct {
	GPUs         int     `json:"gpus"`
	GPUsBasis    string  `json:"gpus_basis"`
	Curve        string  `json:"curve"` // the step whose table it is
	Calls        int     `json:"calls"`
	CallsBasis   string  `json:"calls_basis"`
	MessageB     float64 `json:"message_bytes"`
	MessageBasis string  `json:"message_basis"`
	CallUS       float64 `json:"call_us"`
	LatencyUS    float64 `json:"latency_us"`
	BandwidthUS  float64 `json:"bandwidth_us"`
	Ms           float64 `json:"ms"`
	LatencyMs    float64 `json:"latency_ms"`
	BandwidthMs  float64 `json:"bandwidth_ms"`
	BusGBs       float64 `json:"bus_gbs"` // nccl-tests' bus bandwidth at the call: message / time × 2(n−1)/n
}

// FloorTerm is one term of a decode step's reads.
type FloorTerm struct {
	Name string  `json:"name"`
	GB   float64 `json:"gb"`
	How  string  `json:"how"`
}

// Roofline is a phase's points against the board's roofline.
type Roofline struct {
	Board    string      `json:"board"`
	Dtype    string      `json:"dtype"`
	SpecTF   float64     `json:"spec_tflops"` // the board's peak at its quoted clock
	MemGBs   float64     `json:"mem_gbs"`
	CeilTF   float64     `json:"ceiling_tflops,omitempty"` // the calibration phase's best
	CeilGBs  float64     `json:"ceiling_gbs,omitempty"`
	Points   []RoofPoint `json:"points"`
	Unknown  string      `json:"unknown,omitempty"` // why there is no roofline (an unknown board)
	Formulas [3]string   `json:"formulas"`          // flops, bytes, seconds as written
}

// RoofPoint is one point's runs against the roof: percentages of the
// roof at the spec peak, at the SM clock held (0 when not read), and of
// the measured ceiling (0 without one).
type RoofPoint struct {
	Point     string  `json:"point"`
	Runs      int     `json:"runs"`
	TFLOPS    float64 `json:"tflops"`
	GBs       float64 `json:"gbs"`
	Intensity float64 `json:"flop_per_byte"`
	Bound     string  `json:"bound"` // compute or memory, at the spec peak
	SpecPct   float64 `json:"spec_pct"`
	ClockMHz  float64 `json:"clock_mhz,omitempty"`
	ClockPct  float64 `json:"clock_pct,omitempty"`
	CeilPct   float64 `json:"ceiling_pct,omitempty"`
}

// Row is one result.
type Row struct {
	Phase  string         `json:"phase"`
	Step   int            `json:"step"`            // 1-based
	Point  string         `json:"point,omitempty"` // m=64,shape=down; "" outside a sweep
	Repeat int            `json:"repeat,omitempty"`
	Time   time.Time      `json:"time"`
	Values map[string]any `json:"values"`
	Stamp  []string       `json:"stamp,omitempty"` // why the row was taken under bad conditions
	Checks []Check        `json:"checks,omitempty"`
	// GPU is what the monitor saw of the row's step's GPUs while it ran,
	// as fixed at its end (the runner's facts of the step); nil when none
	// were read.
	GPU *GPUFacts `json:"gpu,omitempty"`
}

// GPUFacts are a step's GPUs while it ran: the readings that fell in it,
// their summed mean power (W, over PowerGPUs GPUs that read it), the
// energy they drew (Wh; none when read only from part-way), the mean SM
// clock their work ran at (MHz), and, for a step the monitor read only
// from part-way (a runner started again while it ran), its first reading.
type GPUFacts struct {
	Readings   int       `json:"readings"`
	PowerW     float64   `json:"power_w,omitempty"`
	PowerGPUs  int       `json:"power_gpus,omitempty"`
	EnergyWh   float64   `json:"energy_wh,omitempty"`
	EnergyFrom string    `json:"energy_from,omitempty"` // what EnergyWh rests on: counter, counter-interpolated, power
	SMClockMHz float64   `json:"sm_mhz,omitempty"`
	SMSamples  int       `json:"sm_samples,omitempty"` // the driver's clock samples SMClockMHz is the mean of; 0: the sampler's rounds
	ReadFrom   time.Time `json:"read_from,omitzero"`
}

// Check is a value judged against an expectation.
type Check struct {
	Metric string  `json:"metric"`
	Expect string  `json:"expect"` // ">= 55", "57 ± 5%"
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
}

// Name is the record's file beside a results file.
func Name(report string) string {
	return strings.TrimSuffix(report, filepath.Ext(report)) + ".json"
}

// Read reads a record strictly: another kind, another schema
// version or a field this greenlight does not know is an error that
// says so.
func Read(path string) (*Record, error) {
	var rows []Row
	r, err := Stream(path, func(row Row) error { rows = append(rows, row); return nil })
	if err != nil {
		return nil, err
	}
	r.Rows = rows
	return r, nil
}

// Stream reads a record as Read does, strictly, but hands each row to
// onRow as it is read instead of keeping them: a record of a million
// rows is read in the memory of one row (compare's). The record returned
// has no Rows. A file cut short is said so, with the byte where it ends.
func Stream(path string, onRow func(Row) error) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	cut := func(before string) error {
		return fmt.Errorf("%s: a greenlight record cut short%s: it ends at byte %d (a disk that filled, a copy not finished); `greenlight report CAMPAIGN.yaml` writes it again", path, before, size)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	wrap := func(err error) error {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return cut("")
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	notRecord := fmt.Errorf("%s: not a greenlight record (no \"kind\": %q at its top)", path, KindName)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notRecord
	}
	var r Record
	var kind string
	var schema int
	n := 0
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			if kind == "" {
				return nil, cut(", before its kind was said")
			}
			return nil, wrap(err)
		}
		key, _ := t.(string)
		if kind == "" && key != "kind" {
			return nil, notRecord // the kind comes first in a greenlight record
		}
		switch key {
		case "kind":
			if err := dec.Decode(&kind); err != nil {
				return nil, cut(", before its kind was said")
			}
			if kind != KindName {
				return nil, notRecord
			}
			r.Kind = kind
		case "schema":
			if err := dec.Decode(&schema); err != nil {
				return nil, wrap(err)
			}
			if schema < MinSchema || schema > Schema {
				return nil, wrongSchema(path, schema)
			}
			r.Schema = schema
		case "campaign":
			err = dec.Decode(&r.Campaign)
		case "conditions":
			err = dec.Decode(&r.Conditions)
		case "phases":
			err = dec.Decode(&r.Phases)
		case "rows":
			err = streamRows(dec, path, &n, onRow)
		default:
			return nil, fmt.Errorf("%s: json: unknown field %q", path, key)
		}
		if err != nil {
			return nil, wrap(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, wrap(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: more after the record's end", path)
	}
	if schema < MinSchema || schema > Schema {
		return nil, wrongSchema(path, schema)
	}
	return &r, nil
}

func wrongSchema(path string, schema int) error {
	return fmt.Errorf("%s: a record of schema %d; this greenlight reads schemas %d to %d (use the greenlight that wrote it, or run `greenlight report` on its campaign to write it again)", path, schema, MinSchema, Schema)
}

// streamRows reads the rows array, one row at a time, its numbers made
// float64 as Read's callers expect.
func streamRows(dec *json.Decoder, path string, n *int, onRow func(Row) error) error {
	if t, err := dec.Token(); err != nil {
		return err
	} else if t == nil {
		return nil // "rows": null
	} else if t != json.Delim('[') {
		return fmt.Errorf("rows: want a list")
	}
	for dec.More() {
		var row Row
		if err := dec.Decode(&row); err != nil {
			return err
		}
		*n++
		for k, v := range row.Values {
			if num, ok := v.(json.Number); ok {
				f, err := num.Float64()
				if err != nil {
					return fmt.Errorf("row %d: %s: %w", *n, k, err)
				}
				row.Values[k] = f
			}
		}
		if err := onRow(row); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ]
	return err
}
