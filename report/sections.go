package report

import (
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// The record is a list of sections. Each phase's block is its own
// (phaseBlock: status, steps, tables) followed by the sections below, in
// this order; a section says whether it applies to a phase by rendering
// "" when it does not, and renders from the plan and the state (and what
// the writer read once from the state dir: summaries, the server's log,
// the kept environment), the same live and in `greenlight report`. Beside
// the file, each phase has its files (tables, charts), written by the
// list after it. Adding a section is its own file and one line here.

// phaseSection renders one section of a phase's block; "" where it does
// not apply.
type phaseSection func(w *Writer, ph *campaign.Phase, p runner.PhaseState, st *runner.State) string

var phaseSections = []phaseSection{
	(*Writer).energySection,       // energy.go: energy per step and per result, from the GPUs' counters
	(*Writer).rooflineSection,     // roofline.go: each GEMM against its roof at the clock it ran
	(*Writer).floorSection,        // floor.go, budget.go: a decode row's floor and time budget
	(*Writer).interconnectSection, // interconnect.go: an all-reduce's curve, against its kind
	(*Writer).busSection,          // interconnect.go: copy bandwidth per link (nvbandwidth)
	(*Writer).serverSection,       // server.go: a service's own view (/metrics)
	(*Writer).runLoadSection,      // runload.go: each serving run's load, asked, achieved and at the server
	(*Writer).loadSection,         // load.go: a service's loads and their stages
	(*Writer).traceSection,        // traces.go: a capture's summary
}

// phaseFile writes one kind of file beside the record for a phase.
type phaseFile struct {
	what  string // for an error: "results table of decode"
	write func(w *Writer, ph *campaign.Phase, p *runner.PhaseState, st *runner.State) error
}

var phaseFiles = []phaseFile{
	{"results table", (*Writer).updateCSV},               // csv.go
	{"charts", (*Writer).updateCharts},                   // chart.go
	{"decode budget chart", (*Writer).updateBudgetChart}, // budget.go
	{"GPU chart", (*Writer).updateGPUChart},              // gpuchart.go
}

// sectionsOf is a phase's sections after its own block, in order.
func (w *Writer) sectionsOf(ph *campaign.Phase, p runner.PhaseState, st *runner.State) string {
	out := ""
	for _, s := range phaseSections {
		out += s(w, ph, p, st)
	}
	return out
}
