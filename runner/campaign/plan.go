package campaign

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Plan is a campaign file checked and resolved: durations parsed, regexes
// compiled, paths absolute, phases in the order they may run.
type Plan struct {
	Name   string
	File   string // absolute path of the campaign file
	Dir    string // its folder; relative paths resolve against it
	Hash   string // sha256 of the file's bytes, hex
	Report string // absolute path of the results file
	// Notify is a shell command run when the campaign needs a person: a
	// gate waits, a phase fails, the disk guard pauses it, it ends.
	Notify string
	Env    map[string]string
	GPUs   int // expected count of this machine's GPUs; 0 when not stated
	// GPUSources are where GPU readings come from, as `--gpu` takes them
	// (auto, nvml, fake:N, none, dcgm:URL[,URL...]); empty: auto.
	GPUSources   []GPUSource
	FailOnExpect bool
	Preflight    Preflight
	Traces       Traces
	Conditions   Conditions
	Compare      Compare
	Phases       []*Phase   // dependency order, file order among equals
	ix           *planIndex // set by Parse; see index
}

// Conditions is what the record keeps of the software the campaign ran
// under: each command's output, and the named Python packages' versions.
type Conditions struct {
	Commands []string
	Packages []string
}

// Compare is how the campaign is held against a previous one.
type Compare struct {
	Baseline  string            // absolute path of a record, results file or campaign file; "" for none
	Tolerance float64           // a change within it is no change, where there are no repeats (0.02)
	Rename    map[string]string // a baseline metric's old name: its name now
}

// Preflight is what must hold before the first phase starts.
type Preflight struct {
	Commands []string
	DiskFree uint64 // bytes; 0 means 5% of the filesystem
	HTTP     []string
}

// Phase is a unit of the campaign: steps run in order, or one service.
type Phase struct {
	ID           string
	Title        string
	Needs        []string
	Manual       bool  // gate: manual
	GPUs         []int // nil means every GPU; empty (gpus: none), none
	Estimate     time.Duration
	Timeout      time.Duration
	Retries      int
	Artifacts    []string // absolute globs
	Expect       []Expect
	FailOnExpect bool
	Steps        []*Step
	Service      *Service
	// Slurm, when set, runs the phase's steps (or its service) as Slurm
	// jobs; nil runs them on this machine.
	Slurm *Slurm
	// Sweep, when set, is the phase's grid: Steps are then its units'
	// steps, one unit after another (see sweep.go).
	Sweep *Sweep
	// Better is which way the phase's metrics improve where no expect:
	// says: "higher", "lower" or "" (unknown: a change is only a change).
	Better Direction
	// BetterOf is better: per metric ({tflops: higher}), over Better.
	BetterOf map[string]Direction
	// Metrics are the result columns the phase is about (metrics.go); nil:
	// every numeric column. MetricsByDefault: its results format's.
	Metrics          []Metric
	MetricsByDefault bool
	// Plot is a sweep's trade-off chart (PlotSpec); nil for none.
	Plot *Plot
	// Curves chooses a sweep's curves (plot: with x an axis); nil: every
	// metric along the first axis.
	Curves *Curves
	// Capture guards a profiler capture's flush; nil for none.
	Capture *Capture
	// Roofline puts each row against the board's roofline; nil: none.
	Roofline *Roofline
	// Floor says decode rows against the floor of their step's reads.
	Floor *Floor
	// After are phases that must have ended, however they ended, before
	// this one starts; unlike Needs it does not use them (a swept
	// service's point starts after the previous point's phases).
	After []string
	// Point, for a phase copied per point of a swept service, is the
	// point it runs under (servicesweep.go); nil for the rest.
	Point *ServicePoint
	// Hash identifies the phase's work: a changed file re-runs a finished
	// phase only when its hash changed.
	Hash string
	// UnitHash, for a sweep, identifies one unit's work (the phase
	// without its grid): a grid edited under the same UnitHash runs only
	// the units it had not done.
	UnitHash string
	// LegacyHash is the hash earlier greenlights journaled (the whole
	// phase as written), so that a campaign resumed by a newer greenlight
	// does not run its finished phases again.
	LegacyHash string
}

// Plot is a trade-off chart: metric Y against metric X, each point of
// the grid labelled by axis Label ("" for its whole point).
type Plot struct{ X, Y, Label string }

// Curves chooses a sweep's charts (plot: with x an axis): X the axis
// along which the lines run, Y the metrics charted (every metric when
// none), Series the axis named first in each line's name, LogX the x
// scale (nil: log when the values span two decades or more).
type Curves struct {
	X      string
	Y      []string
	Series string
	LogX   *bool
}

// Step is one command, run by sh -c under a supervisor.
type Step struct {
	Index    int
	Name     string
	Run      string
	Dir      string
	Env      map[string]string // campaign, phase and step env merged
	Estimate time.Duration
	Timeout  time.Duration
	Progress *regexp.Regexp
	Results  *regexp.Regexp
	// ResultsFormat is a built-in reader of the step's output instead of
	// a regex: FormatVLLMBench.
	ResultsFormat string
	Expect        []Expect
	AllowFailure  bool
	LeaveRunning  bool // what it leaves running is kept until the campaign ends
	WaitQuiet     time.Duration
	// Key names the step in the history file; an edited command is a new key.
	Key string
	// Unit is the point and repeat of a sweep the step runs; nil outside
	// a sweep.
	Unit *Unit
}

// Service is a long-running process with a readiness check.
type Service struct {
	Step                         // how to start it; Index is 0
	MetricsURL    string         // its Prometheus /metrics, scraped while phases use it; "" for none
	MetricsSeries []string       // series kept beyond the known ones
	ReadyHTTP     string         // URL that must answer 2xx
	ReadyLog      *regexp.Regexp // log line that must appear
	ReadyTimeout  time.Duration
	StopTimeout   time.Duration
	// Keep is how long the service stays up for a failed phase that uses
	// it, waiting for a retry that runs on it without a new load; below
	// zero: until you retry the phase or let it go (keep: unset).
	Keep       time.Duration
	Stages     []Stage
	Model      string // the model's folder, absolute; "" when not named
	ModelUnset string // model: as written where a variable in it was unset ("${MODEL_DIR}"): Model is ""
	Prewarm    bool   // read Model into the page cache before the start
}

// Stage is a named part of a service's start-up.
type Stage struct {
	Name  string
	Log   *regexp.Regexp
	Share float64
}

// Phase returns the phase with the given id, or nil.
func (p *Plan) Phase(id string) *Phase {
	if p == nil {
		return nil // no plan (a window given none, as tests make it): no phase
	}
	if p.ix != nil {
		return p.ix.byID[id]
	}
	for _, ph := range p.Phases {
		if ph.ID == id {
			return ph
		}
	}
	return nil
}

// Label is the phase's title, or its id when it has none.
func (ph *Phase) Label() string {
	if ph.Title != "" {
		return ph.Title
	}
	return ph.ID
}

// Label is the step's name, or its command cut short.
func (s *Step) Label() string {
	if s.Name != "" {
		return s.Name
	}
	// A `run: |` block is named by its first line that says something.
	line, more := "", false
	for _, l := range strings.Split(strings.TrimSpace(s.Run), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if line != "" {
			more = true
			break
		}
		line = l
	}
	r := []rune(line)
	if len(r) > 40 {
		return string(r[:39]) + "…"
	}
	if more {
		return line + " …"
	}
	return line
}

// Kind says what the phase runs: "service, point 2/4 of serve",
// "3 point(s) x 2 repeat(s), 6 step(s), a capture of 8 ranks' traces".
func (ph *Phase) Kind() string {
	kind := fmt.Sprintf("%d step(s)", len(ph.Steps))
	switch sw := ph.Sweep; {
	case sw != nil && sw.Search != nil:
		ss := sw.Search
		kind = fmt.Sprintf("a search of %s in [%d, %d] to %g%% for %s: at most %d probes of %d to %d runs (of a grid of %d values)",
			ss.Axis, ss.Lo, ss.Hi, ss.Resolution*100, ss.SLOWords(), ss.MaxProbes(), ss.MinRepeats, ss.MaxRepeats, len(ss.Values))
	case sw != nil:
		if r := sw.Repeats; r.Precision > 0 {
			kind = fmt.Sprintf("%d point(s) x %d to %d runs (until within %g%%), %d step(s) at most", sw.Points, r.Min, r.Max, r.Precision*100, len(ph.Steps))
		} else {
			kind = fmt.Sprintf("%d point(s) x %d repeat(s), %d step(s)", sw.Points, sw.Repeat, len(ph.Steps))
		}
		if sw.Until != "" {
			kind += ", until one fails"
		}
	}
	if ph.Service != nil {
		kind = "service"
		if pt := ph.Point; pt != nil {
			kind += fmt.Sprintf(", point %d/%d of %s", pt.Index, pt.Count, pt.Service)
		}
	}
	if ph.Capture != nil {
		kind += ", " + ph.Capture.String()
	}
	return kind
}

// AllSteps is the steps to run: the service's start counts as one.
func (ph *Phase) AllSteps() []*Step {
	if ph.Service != nil {
		return []*Step{&ph.Service.Step}
	}
	return ph.Steps
}

// FormatVLLMBench is `results: {format: vllm-bench}`: the "Serving
// Benchmark Result" block `vllm bench serve` prints becomes one row, and
// the JSON files its --save-result writes, listed as the phase's
// artifacts, a row each.
const FormatVLLMBench = "vllm-bench"

// FormatNCCLTests is `results: {format: nccl-tests}`: the table
// all_reduce_perf and its siblings print, a row a message size, and the
// summary's average bus bandwidth.
const FormatNCCLTests = "nccl-tests"

// FormatNVBandwidth is `results: {format: nvbandwidth}`: nvbandwidth's
// JSON (-j), each test case's matrix as rows of test, source,
// destination and GB/s.
const FormatNVBandwidth = "nvbandwidth"

// FormatAIPerf is `results: {format: aiperf}`: each run's
// PREFIX_aiperf.json (profile_export_aiperf.json) and the per-request
// PREFIX.jsonl beside it, listed as the phase's artifacts, a row each:
// AIPerf's figures and the load its requests applied.
const FormatAIPerf = "aiperf"

// FormatGuideLLM is `results: {format: guidellm}`: GuideLLM's
// benchmarks.json, listed as the phase's artifacts, a row a benchmark
// (a load: concurrent streams, a rate), with the load its requests
// applied.
const FormatGuideLLM = "guidellm"

// ServingFormats are the formats whose rows are a serving client's runs,
// read from the files the step wrote (a phase's artifacts).
var ServingFormats = []string{FormatVLLMBench, FormatAIPerf, FormatGuideLLM}

// Estimated is what the phase says it takes: its steps' estimates summed,
// else its own estimate; 0 when it says nothing. A search runs at most
// its promised probes, each its least runs, not its whole grid.
func (ph *Phase) Estimated() time.Duration {
	var total time.Duration
	for _, s := range ph.AllSteps() {
		total += s.Estimate
	}
	if sw := ph.Sweep; sw != nil && sw.Search != nil && len(sw.Units) > 0 {
		total = total / time.Duration(len(sw.Units)) * time.Duration(sw.Search.MaxProbes()*sw.Search.MinRepeats)
	}
	if total == 0 {
		total = ph.Estimate
	}
	return total
}

// Rel is a path as the campaign file would write it: relative to its
// folder where it lies under it, else as it is.
func (p *Plan) Rel(path string) string {
	if rel, err := filepath.Rel(p.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// RelAll is Rel of each path.
func (p *Plan) RelAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, x := range paths {
		out[i] = p.Rel(x)
	}
	return out
}
