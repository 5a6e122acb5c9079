package campaign

// The campaign file as written. These types mirror the YAML one to one;
// Load checks them and resolves them into a Plan.

import (
	"encoding/json"
	"strings"
)

// CampaignSpec is the top of a campaign file.
type CampaignSpec struct {
	Name         string            `yaml:"name" json:"name"`
	Report       string            `yaml:"report" json:"report,omitempty"`
	Notify       string            `yaml:"notify" json:"notify,omitempty"`
	Env          map[string]string `yaml:"env" json:"env,omitempty"`
	GPUs         GPUsSpec          `yaml:"gpus" json:"gpus,omitempty"`
	FailOnExpect bool              `yaml:"fail_on_expect" json:"fail_on_expect,omitempty"`
	Preflight    *PreflightSpec    `yaml:"preflight" json:"preflight,omitempty"`
	Traces       *TracesSpec       `yaml:"traces" json:"traces,omitempty"`
	Slurm        *SlurmSpec        `yaml:"slurm" json:"slurm,omitempty"`
	Conditions   *ConditionsSpec   `yaml:"conditions" json:"conditions,omitempty"`
	Baseline     string            `yaml:"baseline" json:"baseline,omitempty"`
	Compare      *CompareSpec      `yaml:"compare" json:"compare,omitempty"`
	Phases       []PhaseSpec       `yaml:"phases" json:"phases"`
}

// ConditionsSpec adds what the campaign's record keeps of the software it
// ran under, beside the machine and GPUs greenlight reads itself:
//
//	conditions:
//	  commands:                    # each output kept; a change is said
//	    - python3 -c "import vllm; print(vllm.__version__)"
//	  packages: [vllm, torch]      # versions from pip list
type ConditionsSpec struct {
	Commands []string `yaml:"commands" json:"commands,omitempty"`
	Packages []string `yaml:"packages" json:"packages,omitempty"`
}

// CompareSpec tunes the comparison with a baseline (and `greenlight
// compare`): the change within which a metric without repeats is the
// same, and the old names of renamed metrics.
//
//	compare:
//	  tolerance: 2%
//	  rename: {tok_s: output_tok_s}   # old name: new name
type CompareSpec struct {
	Tolerance string            `yaml:"tolerance" json:"tolerance,omitempty"`
	Rename    map[string]string `yaml:"rename" json:"rename,omitempty"`
}

// GPUsSpec is `gpus: 8` (this machine's expected count) or a mapping that
// also names where GPU readings come from:
//
//	gpus:
//	  count: 8
//	  sources: [nvml, "dcgm:http://node2:9400/metrics"]
type GPUsSpec struct {
	Count   int      `yaml:"count" json:"count,omitempty"`
	Sources []string `yaml:"sources" json:"sources,omitempty"`
}

// UnmarshalYAML takes a number or the mapping, decoded by the same strict
// decoder so errors keep their line and column.
func (g *GPUsSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var n int
	err := unmarshal(&n)
	if err == nil {
		*g = GPUsSpec{Count: n}
		return nil
	}
	var v any
	if unmarshal(&v) == nil {
		if _, isMap := v.(map[string]any); !isMap {
			return err // `gpus: eight` is a count of the wrong type
		}
	}
	type plain GPUsSpec
	return unmarshal((*plain)(g))
}

// PhaseGPUs is a phase's gpus: this machine's GPU indices, or `none` for a
// phase that holds no GPU (an HTTP client of a service) and never queues
// for one. Left out, the phase uses every GPU.
type PhaseGPUs struct {
	List  []int
	None  bool
	Given bool // the key was written: an empty list is then refused
}

// UnmarshalYAML takes `none` or a list, decoded by the same strict decoder.
func (g *PhaseGPUs) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if unmarshal(&s) == nil {
		if strings.TrimSpace(s) == "none" {
			*g = PhaseGPUs{None: true, Given: true}
			return nil
		}
	}
	var list []int
	if err := unmarshal(&list); err != nil {
		return err
	}
	*g = PhaseGPUs{List: list, Given: true}
	return nil
}

// MarshalJSON writes the list, or "none".
func (g PhaseGPUs) MarshalJSON() ([]byte, error) {
	if g.None {
		return json.Marshal("none")
	}
	return json.Marshal(g.List)
}

// PreflightSpec lists what must hold before the first phase starts.
type PreflightSpec struct {
	Commands []string `yaml:"commands" json:"commands,omitempty"`
	DiskFree string   `yaml:"disk_free" json:"disk_free,omitempty"`
	HTTP     []string `yaml:"http" json:"http,omitempty"`
}

// PhaseSpec is one phase: either steps run in order, or a service.
type PhaseSpec struct {
	ID    string   `yaml:"id" json:"id"`
	Title string   `yaml:"title" json:"title,omitempty"`
	Needs []string `yaml:"needs" json:"needs,omitempty"`
	// After are phases this one comes after, however they ended (an
	// order only: one client on a server at a time), not phases it needs.
	After        []string          `yaml:"after" json:"after,omitempty"`
	Gate         string            `yaml:"gate" json:"gate,omitempty"`
	GPUs         PhaseGPUs         `yaml:"gpus" json:"gpus,omitempty"`
	Estimate     string            `yaml:"estimate" json:"estimate,omitempty"`
	Timeout      string            `yaml:"timeout" json:"timeout,omitempty"`
	Retries      int               `yaml:"retries" json:"retries,omitempty"`
	Artifacts    []string          `yaml:"artifacts" json:"artifacts,omitempty"`
	Env          map[string]string `yaml:"env" json:"env,omitempty"`
	Expect       map[string]any    `yaml:"expect" json:"expect,omitempty"`
	FailOnExpect *bool             `yaml:"fail_on_expect" json:"fail_on_expect,omitempty"`
	Steps        []StepSpec        `yaml:"steps" json:"steps,omitempty"`
	Service      *ServiceSpec      `yaml:"service" json:"service,omitempty"`
	Slurm        *SlurmSpec        `yaml:"slurm" json:"slurm,omitempty"`
	// The grid (sweep.go): axes, runs of each point, their order, an
	// SLO search along the last axis, the noise limit.
	Sweep  SweepSpec   `yaml:"sweep" json:"sweep,omitempty"`
	Repeat *RepeatSpec `yaml:"repeat" json:"repeat,omitempty"`
	Order  string      `yaml:"order" json:"order,omitempty"`
	Until  string      `yaml:"until" json:"until,omitempty"`
	Noise  string      `yaml:"noise" json:"noise,omitempty"`
	// OnFailure: continue lets a grid go on past a failed point (it is
	// recorded failed, and retried alone with retry --point); stop (the
	// default) ends the phase at it.
	OnFailure string `yaml:"on_failure" json:"on_failure,omitempty"`
	// Search finds the largest value of an axis that meets an SLO
	// (search.go); it runs as a sweep of its own.
	Search *SearchSpec `yaml:"search" json:"search,omitempty"`
	// Better says which way is better for the phase's metrics that no
	// expect: gives a direction to: higher or lower.
	Better BetterSpec `yaml:"better" json:"better,omitzero"`
	// Metrics are the result columns the phase is about (metrics.go).
	Metrics []MetricSpec `yaml:"metrics" json:"metrics,omitempty"`
	// Plot asks a sweep for a trade-off chart: one metric against
	// another, each point labelled by an axis, the Pareto front drawn.
	Plot *PlotSpec `yaml:"plot" json:"plot,omitempty"`
	// Capture guards a profiler capture's flush (capture.go).
	Capture *CaptureSpec `yaml:"capture" json:"capture,omitempty"`
	// Roofline puts each row against the board's roofline (roofline.go).
	Roofline *RooflineSpec `yaml:"roofline" json:"roofline,omitempty"`
	// Floor says decode rows against the floor of their step's reads.
	Floor *FloorSpec `yaml:"floor" json:"floor,omitempty"`
}

// StepSpec is one command of a phase.
type StepSpec struct {
	Name         string            `yaml:"name" json:"name,omitempty"`
	Run          string            `yaml:"run" json:"run"`
	Dir          string            `yaml:"dir" json:"dir,omitempty"`
	Env          map[string]string `yaml:"env" json:"env,omitempty"`
	Estimate     string            `yaml:"estimate" json:"estimate,omitempty"`
	Timeout      string            `yaml:"timeout" json:"timeout,omitempty"`
	Progress     string            `yaml:"progress" json:"progress,omitempty"`
	Results      *ResultsSpec      `yaml:"results" json:"results,omitempty"`
	Expect       map[string]any    `yaml:"expect" json:"expect,omitempty"`
	AllowFailure bool              `yaml:"allow_failure" json:"allow_failure,omitempty"`
	// LeaveRunning keeps what the step leaves running when it ends (a
	// daemon the user wants) until the campaign ends, instead of stopping
	// it with the step.
	LeaveRunning bool `yaml:"leave_running" json:"leave_running,omitempty"`
	// WaitQuiet, when set, keeps the step running after its command exits
	// until the phase's artifacts stop growing for that long (trace flushes).
	WaitQuiet string `yaml:"wait_quiet" json:"wait_quiet,omitempty"`
}

// ResultsSpec extracts result rows from a step's log.
type ResultsSpec struct {
	Regex  string `yaml:"regex" json:"regex,omitempty"`
	Format string `yaml:"format" json:"format,omitempty"` // vllm-bench
}

// ServiceSpec is a long-running process other phases use (a vLLM server).
type ServiceSpec struct {
	Run         string            `yaml:"run" json:"run"`
	Dir         string            `yaml:"dir" json:"dir,omitempty"`
	Env         map[string]string `yaml:"env" json:"env,omitempty"`
	Ready       ReadySpec         `yaml:"ready" json:"ready"`
	Estimate    string            `yaml:"estimate" json:"estimate,omitempty"`
	Progress    string            `yaml:"progress" json:"progress,omitempty"`
	StopTimeout string            `yaml:"stop_timeout" json:"stop_timeout,omitempty"`
	// Keep bounds how long the service stays up for a failed phase that
	// uses it, waiting for a retry ("30m" for a night alone); unset: until
	// you retry the phase or let it go.
	Keep    string       `yaml:"keep" json:"keep,omitempty"`
	Stages  []StageSpec  `yaml:"stages" json:"stages,omitempty"`
	Metrics *MetricsSpec `yaml:"metrics" json:"metrics,omitempty"`
	Model   string       `yaml:"model" json:"model,omitempty"`     // the model's folder: its page-cache share is measured at each start
	Prewarm bool         `yaml:"prewarm" json:"prewarm,omitempty"` // read model: into the page cache before the service starts
}

// PlotSpec is a trade-off chart of a sweep:
//
//	plot: {x: tpot_ms, y: output_tok_s, label: concurrency}
//
// or, x an axis, the sweep's curves: which metrics, along which axis,
// which axis first in each line's name, and the x scale:
//
//	plot: {x: m, y: [tflops, time_ms], series: shape, log_x: true}
type PlotSpec struct {
	X      string `yaml:"x" json:"x"`
	Y      Names  `yaml:"y" json:"y"`
	Label  string `yaml:"label" json:"label,omitempty"`
	Series string `yaml:"series" json:"series,omitempty"`
	LogX   *bool  `yaml:"log_x" json:"log_x,omitempty"`
}

// Names is one name or a list of them: `y: tok_s` or `y: [tok_s, tpot_ms]`.
type Names []string

// UnmarshalYAML takes a name or a list, decoded by the same strict decoder.
func (n *Names) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if unmarshal(&s) == nil {
		*n = Names{s}
		return nil
	}
	var list []string
	if err := unmarshal(&list); err != nil {
		return err
	}
	*n = list
	return nil
}

// MarshalJSON writes one name as a string (as the phase's hash always
// had it), more as a list.
func (n Names) MarshalJSON() ([]byte, error) {
	if len(n) == 1 {
		return json.Marshal(n[0])
	}
	return json.Marshal([]string(n))
}

// MetricsSpec is where the server says what it sees (vLLM's Prometheus
// /metrics), scraped while the phases that use it run:
//
//	metrics:
//	  url: http://localhost:8000/metrics
//	  series: [vllm:time_to_first_token_seconds_count]   # more to keep, by name
type MetricsSpec struct {
	URL    string   `yaml:"url" json:"url"`
	Series []string `yaml:"series" json:"series,omitempty"`
}

// UnmarshalYAML takes the URL alone (`metrics: http://.../metrics`, as a
// person writes it) or the mapping, decoded by the same strict decoder.
func (m *MetricsSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var url string
	if err := unmarshal(&url); err == nil {
		*m = MetricsSpec{URL: url}
		return nil
	}
	type plain MetricsSpec
	return unmarshal((*plain)(m))
}

// ReadySpec says when a service is ready: all given probes pass.
type ReadySpec struct {
	HTTP    string `yaml:"http" json:"http,omitempty"`
	Log     string `yaml:"log" json:"log,omitempty"`
	Timeout string `yaml:"timeout" json:"timeout,omitempty"`
}

// StageSpec names a stage of a service's start-up, recognised by a log line.
type StageSpec struct {
	Name string `yaml:"name" json:"name"`
	Log  string `yaml:"log" json:"log"`
	// Share is the stage's expected fraction of the whole start-up, for the
	// ETA when the stage itself reports no progress.
	Share float64 `yaml:"share" json:"share,omitempty"`
}
