package main

// greenlight status: how a campaign stands, from its journal and its lock,
// for a person in another shell or a script. It runs nothing and signals
// nothing, whether a window, the background monitor or nobody holds the
// campaign.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/greenlight-run/greenlight/runner"
)

// statusSchema names the JSON below; a change that is not an addition
// gets a new version.
const statusSchema = "greenlight.status/v1"

type statusJSON struct {
	Schema   string        `json:"schema"`
	Campaign string        `json:"campaign"`
	File     string        `json:"file"`
	Report   string        `json:"report"`
	StateDir string        `json:"state_dir"`
	Monitor  statusMonitor `json:"monitor"`
	Finished bool          `json:"finished"`
	Failed   bool          `json:"failed"`
	Started  *time.Time    `json:"started,omitempty"`
	Ended    *time.Time    `json:"ended,omitempty"`
	Phases   []statusPhase `json:"phases"`
}

type statusMonitor struct {
	PID  int    `json:"pid,omitempty"`
	Kind string `json:"kind"` // "window", "background" or "none"
}

type statusPhase struct {
	ID           string     `json:"id"`
	Title        string     `json:"title"`
	Status       string     `json:"status"`
	Reason       string     `json:"reason,omitempty"`
	Waiting      string     `json:"waiting,omitempty"` // why a phase not started waits
	Gate         bool       `json:"gate"`              // has a manual gate
	Attempt      int        `json:"attempt"`
	Started      *time.Time `json:"started,omitempty"`
	Ended        *time.Time `json:"ended,omitempty"`
	Results      int        `json:"results"`
	ExpectFailed int        `json:"expect_failed"`
	NotProduced  []string   `json:"not_produced,omitempty"`
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	stateDir := fs.String("state-dir", "", "")
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			fmt.Fprintf(stderr, "greenlight status: %v\n\n%s", err, commandHelp["status"])
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(rest) != 1 {
		fmt.Fprint(stderr, commandHelp["status"])
		return exitUsage
	}
	plan, ok := loadPlan(rest[0], stderr)
	if !ok {
		return exitUsage
	}
	dir := *stateDir
	if dir == "" {
		dir = runner.DefaultStateDir(plan)
	}
	st, err := runner.Replay(plan, dir)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight status: %v\n", err)
		return exitUsage
	}
	out := statusOf(plan, dir, st)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return exitOK
	}
	printStatus(stdout, out)
	return exitOK
}

func statusOf(plan *runner.Plan, dir string, st *runner.State) statusJSON {
	abs, _ := filepath.Abs(dir)
	out := statusJSON{Schema: statusSchema, Campaign: plan.Name, File: plan.File, Report: plan.Report, StateDir: abs,
		Monitor: monitorOf(dir), Finished: st.Finished, Failed: st.Failed(), Started: timePtr(st.Started), Ended: timePtr(st.Ended)}
	for _, p := range st.Phases {
		sp := statusPhase{ID: p.ID, Title: p.Title, Status: string(p.Status), Reason: p.Reason, Waiting: p.WaitReason,
			Gate: p.Manual, Attempt: p.Attempt, Started: timePtr(p.Started), Ended: timePtr(p.Ended), ExpectFailed: p.ExpectFailed}
		for _, s := range p.Steps {
			sp.Results += len(s.Results)
		}
		for _, m := range p.Missing {
			sp.NotProduced = append(sp.NotProduced, m.Column)
		}
		out.Phases = append(out.Phases, sp)
	}
	return out
}

// monitorOf says who holds the campaign: a window, the background
// monitor, or nobody.
func monitorOf(dir string) statusMonitor {
	pid, held := runner.LockHolder(dir)
	switch {
	case !held:
		return statusMonitor{Kind: "none"}
	case isHeadless(pid):
		return statusMonitor{PID: pid, Kind: "background"}
	}
	return statusMonitor{PID: pid, Kind: "window"}
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
	case s.Finished && s.Failed:
		state = "finished, with failures"
	case s.Finished:
		state = "finished"
	case s.Monitor.Kind == "window":
		state = fmt.Sprintf("running, in a window (pid %d)", s.Monitor.PID)
	case s.Monitor.Kind == "background":
		state = fmt.Sprintf("running in the background (pid %d; `greenlight run %s` takes it back)", s.Monitor.PID, s.File)
	default:
		state += fmt.Sprintf(": no greenlight holds it; `greenlight run %s` resumes it", s.File)
	}
	fmt.Fprintf(w, "%s: %s\n", s.Campaign, state)
	if s.Started != nil {
		fmt.Fprintf(w, "started %s", s.Started.Format("2006-01-02 15:04:05"))
		if s.Ended != nil {
			fmt.Fprintf(w, ", ended %s (%s)", s.Ended.Format("2006-01-02 15:04:05"), runner.FormatDuration(s.Ended.Sub(*s.Started)))
		}
		fmt.Fprintln(w)
	}
	for _, p := range s.Phases {
		line := fmt.Sprintf("  %-14s %-8s", p.ID, p.Status)
		if p.Reason != "" {
			line += " " + p.Reason
		} else if p.Waiting != "" {
			line += " " + p.Waiting
		}
		if p.Results > 0 {
			line += fmt.Sprintf(" · %s", runner.Count(p.Results, "result"))
		}
		for _, m := range p.NotProduced {
			line += " · ✗ " + m + " not produced"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "results: %s\n", s.Report)
}
