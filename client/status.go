package client

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// A campaign's status for a person in another shell or a script: its
// runner's own state when one runs it (live progress and ETAs), else its
// journal. Reading it runs nothing and signals nothing.

// StatusSchema names the JSON below; a change that is not an addition
// gets a new version.
// v3: each phase carries its results model (model), the one the record
// has; a grid's points read from it (a point stopped as precise is
// "precise", not "skipped"; a search's values probed or not, its repeats
// its own); the JSON Schema is schema/status.schema.json.
const StatusSchema = "greenlight.status/v3"

type Status struct {
	Schema   string        `json:"schema"`
	Campaign string        `json:"campaign"`
	File     string        `json:"file"`
	Report   string        `json:"report"`
	StateDir string        `json:"state_dir"`
	Monitor  StatusMonitor `json:"monitor"`
	State    string        `json:"state"` // running, paused, frozen, stopped, finished, failed; interrupted where no runner runs it
	Finished bool          `json:"finished"`
	Failed   bool          `json:"failed"`
	Paused   bool          `json:"paused"`
	Frozen   bool          `json:"frozen"`
	Started  *time.Time    `json:"started,omitempty"`
	Ended    *time.Time    `json:"ended,omitempty"`
	ETA      *StatusETA    `json:"eta,omitempty"` // the whole campaign's; only from a live runner
	Phases   []StatusPhase `json:"phases"`
	// ReportHeld, while an editor has the results file open, says so:
	// greenlight writes it when the editor lets go.
	ReportHeld string `json:"report_held,omitempty"`
}

// StatusETA is an ETA as the window shows it, for a script.
type StatusETA struct {
	StartsAt   *time.Time `json:"starts_at,omitempty"` // Slurm's expected start of a queued job, counted in remaining_s
	RemainingS float64    `json:"remaining_s"`
	Source     string     `json:"source"`           // progress, history, estimate, learned, stages...
	LowerBound bool       `json:"lower_bound"`      // some remaining work has no estimate
	WaitsGate  bool       `json:"waits_for_gate"`   // a gate waits for a person on the way
	OverS      float64    `json:"over_s,omitempty"` // running past its estimate by this much
	Text       string     `json:"text"`             // as the window says it
}

func etaOf(e state.ETA) *StatusETA {
	if !e.Known && e.Over == 0 && !e.Queued {
		return nil
	}
	return &StatusETA{RemainingS: e.Remaining.Seconds(), Source: e.Source, LowerBound: e.Partial || e.Queued && !e.Known,
		WaitsGate: e.Waiting, OverS: e.Over.Seconds(), Text: e.Text(), StartsAt: timePtr(e.StartsAt)}
}

type StatusMonitor struct {
	PID int `json:"pid,omitempty"`
	// Problem says why the runner holding the campaign did not answer
	// (stopped with kill -STOP, stuck); the figures are then the journal's.
	Problem string `json:"problem,omitempty"`
	Kind    string `json:"kind"` // "runner" (live: the figures are its own) or "none" (from the journal)
}

type StatusPhase struct {
	ID           string        `json:"id"`
	Title        string        `json:"title"`
	Status       string        `json:"status"`
	Reason       string        `json:"reason,omitempty"`
	Waiting      string        `json:"waiting,omitempty"` // why a phase not started waits
	Kept         string        `json:"kept,omitempty"`    // a service up only for failed phases that may run again on it
	LetGo        bool          `json:"let_go,omitempty"`  // a failed phase you let go: it stays failed
	Gate         bool          `json:"gate"`              // has a manual gate
	Attempt      int           `json:"attempt"`
	Started      *time.Time    `json:"started,omitempty"`
	Ended        *time.Time    `json:"ended,omitempty"`
	Progress     *float64      `json:"progress,omitempty"` // 0..1 of the running step; live only
	ETA          *StatusETA    `json:"eta,omitempty"`      // live only
	Results      int           `json:"results"`
	ExpectFailed int           `json:"expect_failed"`
	NotProduced  []string      `json:"not_produced,omitempty"`
	Slurm        *StatusSlurm  `json:"slurm,omitempty"`  // the phase's current or last Slurm job
	Points       *StatusPoints `json:"points,omitempty"` // a sweep's grid
	// ServicePoint, for a phase run per point of a swept service, is the
	// point it runs under.
	ServicePoint *StatusServicePoint `json:"service_point,omitempty"`
	// Model is the phase's results model, as the record (NAME.json) has
	// it: every point's state, runs, stats and verdicts, a search's
	// result.
	Model *results.Phase `json:"model,omitempty"`
	// Floor is a decode phase's floor and time budget, row by row, with
	// the verdict (where decode time goes, and whether it is the bus), as
	// the record (NAME.json) last written has it; nil before it is.
	Floor *record.Floor `json:"floor,omitempty"`
}

// StatusServicePoint is the point of a swept service a phase runs under:
// the service and the phase as written, the point (max_num_seqs=64,...)
// and its place in the service's grid.
type StatusServicePoint struct {
	Service string            `json:"service"`
	Phase   string            `json:"phase"`
	Point   string            `json:"point"`
	Index   int               `json:"index"` // 1-based
	Total   int               `json:"total"`
	Values  map[string]string `json:"values"`
}

func servicePointOf(ph *campaign.Phase) *StatusServicePoint {
	pt := ph.Point
	if pt == nil {
		return nil
	}
	out := &StatusServicePoint{Service: pt.Service, Phase: pt.Phase, Point: pt.Key, Index: pt.Index, Total: pt.Count, Values: map[string]string{}}
	for _, v := range pt.Values {
		out.Values[v.Axis] = v.Value
	}
	return out
}

// StatusPoints is a sweep phase's grid, read from its results model: how
// many points need no more runs, which one runs, and each point's state
// (results.PointState: pending, running, done, precise, skipped, cut,
// not-probed, failed, stopped).
type StatusPoints struct {
	Done    int `json:"done"`              // through: done, precise, skipped, cut or not probed
	Precise int `json:"precise,omitempty"` // of Done: stopped as precise (repeat: {until:})
	Skipped int `json:"skipped,omitempty"` // of Done: skipped by you (x, skip --point)
	Cut     int `json:"cut,omitempty"`     // of Done: cut by until: failed
	// NotProbed, of Done: grid values a search never asked for.
	NotProbed int               `json:"not_probed,omitempty"`
	Failed    int               `json:"failed,omitempty"` // points a run of which failed (on_failure: continue)
	Total     int               `json:"total"`
	Current   string            `json:"current,omitempty"` // m=64,shape=down
	Repeat    int               `json:"repeat,omitempty"`  // of the current point
	Repeats   int               `json:"repeats"`           // a point's runs at most
	Status    map[string]string `json:"status"`
	Search    *StatusSearch     `json:"search,omitempty"` // a search phase: its probes, not its grid
}

// StatusSearch is a search phase's progress: the probes judged, the most
// it takes, the limit so far and its bracket, and the value probed now.
type StatusSearch struct {
	Axis      string `json:"axis"`
	Probes    int    `json:"probes"`
	MaxProbes int    `json:"max_probes"`
	Limit     int    `json:"limit,omitempty"` // the largest passing value so far (0: none yet)
	Above     int    `json:"above,omitempty"` // the smallest value above it that failed or could not be told (0: none)
	Probing   int    `json:"probing,omitempty"`
	Run       int    `json:"run,omitempty"` // of the value probed now
	Done      bool   `json:"done,omitempty"`
	Words     string `json:"words,omitempty"` // what it found, as the record says it
	// Slip: the search stopped because its SLO names a column no run
	// wrote (results.SearchSlip); no limit is given.
	Slip string `json:"slip,omitempty"`
}

// Words says a sweep's progress for `status`: " · points 3/10 done (1
// skipped), running m=64 (repeat 2/3)", or a search's: " · search:
// probe 8 of at most 13, concurrency 74 passes, 158 fails, probing 108
// (run 2)".
func (pt *StatusPoints) Words() string {
	switch {
	case pt == nil:
		return ""
	case pt.Search != nil:
		s := pt.Search
		if s.Slip != "" {
			return " · search stopped: " + s.Slip
		}
		w := fmt.Sprintf(" · search: %d of at most %d probes", s.Probes, s.MaxProbes)
		if s.Words != "" {
			w += ": " + s.Words
		}
		if s.Probing > 0 {
			w += fmt.Sprintf(", probing %d (run %d)", s.Probing, s.Run)
		}
		return w
	}
	w := fmt.Sprintf(" · points %d/%d done", pt.Done, pt.Total)
	var of []string
	if pt.Precise > 0 {
		of = append(of, fmt.Sprintf("%d stopped as precise", pt.Precise))
	}
	if pt.Skipped > 0 {
		of = append(of, fmt.Sprintf("%d skipped", pt.Skipped))
	}
	if len(of) > 0 {
		w += " (" + strings.Join(of, ", ") + ")"
	}
	if pt.Current != "" {
		w += fmt.Sprintf(", running %s (repeat %d/%d)", pt.Current, pt.Repeat, pt.Repeats)
	}
	return w
}

// searchOf is a search phase's progress, from its results model.
func searchOf(rs *results.Search) *StatusSearch {
	out := &StatusSearch{Axis: rs.Axis, Probes: len(rs.Probes), MaxProbes: rs.MaxProbes, Above: rs.Above, Done: rs.Done,
		Slip: rs.Slip, Probing: rs.Probing, Run: rs.Run, Words: rs.Words}
	if rs.Found && rs.Slip == "" {
		out.Limit = rs.Limit
	}
	return out
}

// pointsOf is the grid of a sweep phase, from its results model.
func pointsOf(ph *campaign.Phase, p state.PhaseState, rp *results.Phase) *StatusPoints {
	sw := ph.Sweep
	if sw == nil || len(sw.Units) == 0 || rp == nil || rp.Count == nil {
		return nil
	}
	c := rp.Count
	out := &StatusPoints{Total: c.Points, Done: c.Through, Precise: c.Precise, Skipped: c.Skipped, Cut: c.Cut, NotProbed: c.NotProbed, Failed: c.Failed,
		Repeats: sw.Repeats.Max, Status: map[string]string{}}
	if rs := rp.Search; rs != nil {
		out.Search = searchOf(rs)
		out.Repeats = sw.Search.MaxRepeats
	}
	for _, pt := range rp.Points {
		out.Status[pt.Key] = string(pt.State)
	}
	if p.Status == state.Running && p.Current < len(p.Steps) && p.Steps[p.Current].Status == state.Running {
		if u := ph.AllSteps()[p.Current].Unit; u != nil {
			out.Current, out.Repeat = sw.Key(*u), u.Repeat
		}
	}
	return out
}

// StatusSlurm is a phase's Slurm job as Slurm last said it.
type StatusSlurm struct {
	Job           string     `json:"job"`
	State         string     `json:"state,omitempty"`  // PENDING, RUNNING, COMPLETED, TIMEOUT, ...
	Reason        string     `json:"reason,omitempty"` // why it pends, or how Slurm ended it
	Nodes         string     `json:"nodes,omitempty"`  // Slurm's node list
	Node          string     `json:"node,omitempty"`   // the batch node's address (${GREENLIGHT_NODE})
	Partition     string     `json:"partition,omitempty"`
	Submitted     *time.Time `json:"submitted,omitempty"`
	Started       *time.Time `json:"started,omitempty"`
	ExpectedStart *time.Time `json:"expected_start,omitempty"` // Slurm's, while it pends
	QueueWaitS    float64    `json:"queue_wait_s"`             // submission to start, or so far
	Text          string     `json:"text"`
}

func slurmOf(j *state.SlurmJob, now time.Time) *StatusSlurm {
	if j == nil {
		return nil
	}
	wait := j.QueueWait
	if j.Queued() && !j.Submitted.IsZero() {
		wait = now.Sub(j.Submitted)
	}
	return &StatusSlurm{Job: j.ID, State: j.State, Reason: j.Reason, Nodes: j.Nodes, Node: j.Node, Partition: j.Partition,
		Submitted: timePtr(j.Submitted), Started: timePtr(j.Started), ExpectedStart: timePtr(j.StartsAt),
		QueueWaitS: wait.Seconds(), Text: j.Words(now)}
}

// monitorOf says who holds the campaign: its runner, or nobody.
func monitorOf(dir string) StatusMonitor {
	pid, held := state.LockHolder(dir)
	if !held {
		return StatusMonitor{Kind: "none"}
	}
	return StatusMonitor{PID: pid, Kind: "runner"}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// StateInterrupted is the state of a campaign that has not finished and
// that no runner runs (its runner killed, the machine restarted):
// `greenlight run` resumes it.
const StateInterrupted = "interrupted"

// StatusOf is st as the status of the campaign in dir.
func StatusOf(plan *campaign.Plan, dir string, st *state.State) Status {
	abs, _ := filepath.Abs(dir)
	out := Status{Schema: StatusSchema, Campaign: plan.Name, File: plan.File, Report: plan.Report, StateDir: abs,
		Monitor: monitorOf(dir), State: string(st.Headline()), Finished: st.Finished, Failed: st.Failed(), Paused: st.Paused, Frozen: st.Frozen,
		Started: timePtr(st.Started), Ended: timePtr(st.Ended)}
	if !st.Finished {
		out.ETA = etaOf(st.ETA)
	}
	if h := mdfile.HolderOf(plan.Report); h != nil {
		out.ReportHeld = (&mdfile.Held{Path: plan.Report, By: *h}).Error()
	}
	model := results.Of(plan, st)
	floors := floorsOf(plan)
	for _, p := range st.Phases {
		sp := StatusPhase{ID: p.ID, Title: p.Title, Status: string(p.Status), Reason: p.Reason, Waiting: p.WaitReason, Kept: p.Kept, LetGo: p.LetGo,
			Gate: p.Manual, Attempt: p.Attempt, Started: timePtr(p.Started), Ended: timePtr(p.Ended), ExpectFailed: p.ExpectFailed}
		for _, s := range p.Steps {
			sp.Results += len(s.Results)
		}
		if p.Status == state.Running {
			sp.ETA = etaOf(p.ETA)
			if c := p.Current; c < len(p.Steps) && p.Steps[c].Progress >= 0 {
				f := p.Steps[c].Progress
				sp.Progress = &f
			}
		}
		for _, m := range p.Missing {
			sp.NotProduced = append(sp.NotProduced, m.Column)
		}
		sp.Slurm = slurmOf(p.Slurm, time.Now())
		if ph := plan.Phase(p.ID); ph != nil {
			sp.Model = model.Phase(p.ID)
			sp.Points, sp.ServicePoint = pointsOf(ph, p, sp.Model), servicePointOf(ph)
		}
		sp.Floor = floors[p.ID]
		out.Phases = append(out.Phases, sp)
	}
	return out
}

// floorsOf are the decode phases' floors and budgets by phase id, as the
// campaign's record (NAME.json) last written has them: worked out by the
// writer from the rows, the curves, the roofline and the traces, and read
// here, not worked out again. None before the record is written.
func floorsOf(plan *campaign.Plan) map[string]*record.Floor {
	out := map[string]*record.Floor{}
	if plan.Report == "" {
		return out
	}
	rec, err := record.Read(record.Name(plan.Report))
	if err != nil {
		return out
	}
	for _, p := range rec.Phases {
		if p.Floor != nil {
			out[p.ID] = p.Floor
		}
	}
	return out
}

// ErrNeverRan is a campaign that has not run here: no journal.
var ErrNeverRan = errors.New("has not run here")

// ReadStatus is the campaign's status: from its runner when one answers,
// else from its journal (ETAs and progress left out: nobody measures
// them). problem says why a runner that holds the campaign did not
// answer; err is ErrNeverRan, or a journal that cannot be read.
func ReadStatus(j Journal, plan *campaign.Plan, dir string) (out Status, problem, err error) {
	st, pid, problem := LiveState(dir)
	if st != nil {
		out = StatusOf(plan, dir, st)
		out.Monitor = StatusMonitor{PID: pid, Kind: "runner"}
		return out, nil, nil
	}
	if !HasJournal(dir) {
		return out, problem, ErrNeverRan
	}
	st, err = j.Replay(plan, dir)
	if err != nil {
		return out, problem, err
	}
	out = StatusOf(plan, dir, st)
	if problem != nil {
		out.Monitor.Problem = problem.Error()
	}
	if !out.Finished {
		// The journal says it was running, but no runner runs it (killed,
		// the machine restarted): not "running".
		out.State = StateInterrupted
	}
	out.ETA = nil
	for i := range out.Phases {
		out.Phases[i].ETA, out.Phases[i].Progress = nil, nil
	}
	return out, problem, nil
}
