package main

// greenlight status: how a campaign stands, for a person in another shell
// or a script: its runner's own state when one runs it (live progress and
// ETAs), else its journal. It runs nothing and signals nothing.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/link"
)

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
	cfg := link.Config{StateDir: *stateDir}
	if err := locate(plan, &cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "greenlight status: %v\n", err)
		return exitUsage
	}
	dir := cfg.StateDir
	out, problem, err := client.ReadStatus(runner.Journal{}, plan, dir)
	switch {
	case errors.Is(err, client.ErrNeverRan):
		fmt.Fprintf(stderr, "greenlight status: %s has not run here (no journal in %s): `greenlight run %s` starts it\n", plan.Name, dir, plan.File)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "greenlight status: %v\n", err)
		return exitUsage
	case problem != nil:
		fmt.Fprintf(stderr, "greenlight status: %v; showing the journal\n", problem)
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

func printStatus(w io.Writer, s client.Status) {
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
		line += p.Points.Words()
		for _, m := range p.NotProduced {
			line += " · ✗ " + m + " not produced"
		}
		if p.Slurm != nil {
			line += " · " + p.Slurm.Text
		}
		fmt.Fprintln(w, line)
		if p.Floor != nil && p.Floor.Verdict != "" {
			fmt.Fprintf(w, "  %-14s %s (the record's budget, %s)\n", "", safe.Line(p.Floor.Verdict, 0), record.Name(s.Report))
		}
	}
	fmt.Fprintf(w, "results: %s\n", s.Report)
	if s.ReportHeld != "" {
		fmt.Fprintf(w, "  %s\n", s.ReportHeld)
	}
}
