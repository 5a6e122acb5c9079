package main

// greenlight status: how a campaign stands, for a person in another shell
// or a script: its runner's own state when one runs it (live progress and
// ETAs), else its journal. It runs nothing and signals nothing.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner"
)

// statusSchema names the JSON below; a change that is not an addition
// gets a new version.
const statusSchema = "greenlight.status/v2"

type statusJSON struct {
	Schema   string        `json:"schema"`
	Campaign string        `json:"campaign"`
	File     string        `json:"file"`
	Report   string        `json:"report"`
	StateDir string        `json:"state_dir"`
	Monitor  statusMonitor `json:"monitor"`
	State    string        `json:"state"` // running, paused, frozen, stopped, finished, failed
	Finished bool          `json:"finished"`
	Failed   bool          `json:"failed"`
	Paused   bool          `json:"paused"`
	Frozen   bool          `json:"frozen"`
	Started  *time.Time    `json:"started,omitempty"`
	Ended    *time.Time    `json:"ended,omitempty"`
	ETA      *statusETA    `json:"eta,omitempty"` // the whole campaign's; only from a live runner
	Phases   []statusPhase `json:"phases"`
}

// statusETA is an ETA as the window shows it, for a script.
type statusETA struct {
	StartsAt   *time.Time `json:"starts_at,omitempty"` // Slurm's expected start of a queued job, counted in remaining_s
	RemainingS float64    `json:"remaining_s"`
	Source     string     `json:"source"`           // progress, history, estimate, learned, stages...
	LowerBound bool       `json:"lower_bound"`      // some remaining work has no estimate
	WaitsGate  bool       `json:"waits_for_gate"`   // a gate waits for a person on the way
	OverS      float64    `json:"over_s,omitempty"` // running past its estimate by this much
	Text       string     `json:"text"`             // as the window says it
}

func etaOf(e runner.ETA) *statusETA {
	if !e.Known && e.Over == 0 && !e.Queued {
		return nil
	}
	return &statusETA{RemainingS: e.Remaining.Seconds(), Source: e.Source, LowerBound: e.Partial || e.Queued && !e.Known,
		WaitsGate: e.Waiting, OverS: e.Over.Seconds(), Text: e.Text(), StartsAt: timePtr(e.StartsAt)}
}

type statusMonitor struct {
	PID int `json:"pid,omitempty"`
	// Problem says why the runner holding the campaign did not answer
	// (stopped with kill -STOP, stuck); the figures are then the journal's.
	Problem string `json:"problem,omitempty"`
	Kind    string `json:"kind"` // "runner" (live: the figures are its own) or "none" (from the journal)
}

type statusPhase struct {
	ID           string       `json:"id"`
	Title        string       `json:"title"`
	Status       string       `json:"status"`
	Reason       string       `json:"reason,omitempty"`
	Waiting      string       `json:"waiting,omitempty"` // why a phase not started waits
	Gate         bool         `json:"gate"`              // has a manual gate
	Attempt      int          `json:"attempt"`
	Started      *time.Time   `json:"started,omitempty"`
	Ended        *time.Time   `json:"ended,omitempty"`
	Progress     *float64     `json:"progress,omitempty"` // 0..1 of the running step; live only
	ETA          *statusETA   `json:"eta,omitempty"`      // live only
	Results      int          `json:"results"`
	ExpectFailed int          `json:"expect_failed"`
	NotProduced  []string     `json:"not_produced,omitempty"`
	Slurm        *statusSlurm `json:"slurm,omitempty"` // the phase's current or last Slurm job
}

// statusSlurm is a phase's Slurm job as Slurm last said it.
type statusSlurm struct {
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

func slurmOf(j *runner.SlurmJob, now time.Time) *statusSlurm {
	if j == nil {
		return nil
	}
	wait := j.QueueWait
	if j.Queued() && !j.Submitted.IsZero() {
		wait = now.Sub(j.Submitted)
	}
	return &statusSlurm{Job: j.ID, State: j.State, Reason: j.Reason, Nodes: j.Nodes, Node: j.Node, Partition: j.Partition,
		Submitted: timePtr(j.Submitted), Started: timePtr(j.Started), ExpectedStart: timePtr(j.StartsAt),
		QueueWaitS: wait.Seconds(), Text: j.Words(now)}
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	stateDir := fs.String("state-dir", "", "")
	rest, err := parseAnywhere(fs, args)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight status: %v\n\n%s", err, commandHelp["status"])
		return exitUsage
	}
	if len(rest) != 1 {
		fmt.Fprint(stderr, commandHelp["status"])
		return exitUsage
	}
	plan, ok := loadPlan(rest[0], stderr)
	if !ok {
		return exitUsage
	}
	cfg := daemon.Config{StateDir: *stateDir}
	if err := locate(plan, &cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "greenlight status: %v\n", err)
		return exitUsage
	}
	dir := cfg.StateDir
	var out statusJSON
	st, pid, problem := client.LiveState(dir)
	if st != nil {
		out = statusOf(plan, dir, st)
		out.Monitor = statusMonitor{PID: pid, Kind: "runner"}
	} else {
		if !client.HasJournal(dir) {
			fmt.Fprintf(stderr, "greenlight status: %s has not run here (no journal in %s): `greenlight run %s` starts it\n", plan.Name, dir, plan.File)
			return exitUsage
		}
		st, err := runner.Replay(plan, dir)
		if err != nil {
			fmt.Fprintf(stderr, "greenlight status: %v\n", err)
			return exitUsage
		}
		out = statusOf(plan, dir, st)
		if problem != nil {
			out.Monitor.Problem = problem.Error()
			fmt.Fprintf(stderr, "greenlight status: %v; showing the journal\n", problem)
		}
		out.ETA = nil
		for i := range out.Phases {
			out.Phases[i].ETA, out.Phases[i].Progress = nil, nil
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return exitOK
	}
	printStatus(stdout, out)
	return exitOK
}

func statusOf(plan *campaign.Plan, dir string, st *runner.State) statusJSON {
	abs, _ := filepath.Abs(dir)
	out := statusJSON{Schema: statusSchema, Campaign: plan.Name, File: plan.File, Report: plan.Report, StateDir: abs,
		Monitor: monitorOf(dir), State: string(st.Headline()), Finished: st.Finished, Failed: st.Failed(), Paused: st.Paused, Frozen: st.Frozen,
		Started: timePtr(st.Started), Ended: timePtr(st.Ended)}
	if !st.Finished {
		out.ETA = etaOf(st.ETA)
	}
	for _, p := range st.Phases {
		sp := statusPhase{ID: p.ID, Title: p.Title, Status: string(p.Status), Reason: p.Reason, Waiting: p.WaitReason,
			Gate: p.Manual, Attempt: p.Attempt, Started: timePtr(p.Started), Ended: timePtr(p.Ended), ExpectFailed: p.ExpectFailed}
		for _, s := range p.Steps {
			sp.Results += len(s.Results)
		}
		if p.Status == runner.Running {
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
		out.Phases = append(out.Phases, sp)
	}
	return out
}

// monitorOf says who holds the campaign: its runner, or nobody.
func monitorOf(dir string) statusMonitor {
	pid, held := runner.LockHolder(dir)
	if !held {
		return statusMonitor{Kind: "none"}
	}
	return statusMonitor{PID: pid, Kind: "runner"}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func printStatus(w io.Writer, s statusJSON) {
	state := "not running"
	switch {
	case s.Finished:
		state = s.State
		if s.State == string(runner.HeadStopped) {
			state += fmt.Sprintf(" (by you: `greenlight run %s` resumes it)", s.File)
		}
	case s.Monitor.Kind == "runner" && s.Monitor.Problem != "":
		state = fmt.Sprintf("held by its runner (pid %d), which does not answer: %s", s.Monitor.PID, s.Monitor.Problem)
	case s.Monitor.Kind == "runner":
		state = fmt.Sprintf("running (runner pid %d; `greenlight run %s` attaches a window)", s.Monitor.PID, s.File)
		if s.Paused {
			state = "paused, " + state
		}
		if s.Frozen {
			state = "frozen, " + state
		}
		if s.ETA != nil {
			state += "; done in " + s.ETA.Text
			if s.ETA.Source != "" {
				state += " (" + s.ETA.Source + ")"
			}
			if s.ETA.WaitsGate {
				state += ", and a gate on the way waits for a person"
			}
		}
	default:
		state += fmt.Sprintf(": no runner runs it; `greenlight run %s` resumes it", s.File)
	}
	fmt.Fprintf(w, "%s: %s\n", s.Campaign, state)
	if s.Started != nil {
		fmt.Fprintf(w, "started %s", s.Started.Format("2006-01-02 15:04:05"))
		if s.Ended != nil {
			fmt.Fprintf(w, ", ended %s (%s)", s.Ended.Format("2006-01-02 15:04:05"), format.Duration(s.Ended.Sub(*s.Started)))
		}
		fmt.Fprintln(w)
	}
	for _, p := range s.Phases {
		line := fmt.Sprintf("  %-14s %-8s", p.ID, p.Status)
		if p.Progress != nil {
			line += fmt.Sprintf(" %3.0f%%", *p.Progress*100)
		}
		if p.ETA != nil {
			line += " ETA " + p.ETA.Text
			if p.ETA.Source != "" {
				line += " (" + p.ETA.Source + ")"
			}
		}
		if p.Reason != "" {
			line += " " + p.Reason
		} else if p.Waiting != "" {
			line += " " + p.Waiting
		}
		if p.Results > 0 {
			line += fmt.Sprintf(" · %s", format.Count(p.Results, "result"))
		}
		for _, m := range p.NotProduced {
			line += " · ✗ " + m + " not produced"
		}
		if p.Slurm != nil {
			line += " · " + p.Slurm.Text
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "results: %s\n", s.Report)
}
