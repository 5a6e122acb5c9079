package main

// greenlight validate and greenlight report: commands that run nothing.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/format"
)

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: greenlight validate CAMPAIGN.yaml")
		return 2
	}
	plan, ok := loadPlan(args[0], stderr)
	if !ok {
		return 2
	}
	fmt.Fprintf(stdout, "%s: campaign %q is valid\nresults file: %s\n\n", args[0], plan.Name, plan.Report)
	for i, ph := range plan.Phases {
		kind := fmt.Sprintf("%d step(s)", len(ph.Steps))
		if ph.Service != nil {
			kind = "service"
		}
		gpus := "all GPUs"
		if ph.GPUs != nil {
			gpus = "GPUs " + strings.Trim(fmt.Sprint(ph.GPUs), "[]")
		}
		if ph.Slurm != nil {
			gpus = "on Slurm (" + ph.Slurm.String() + ")"
		}
		est := "no estimate"
		var total time.Duration
		for _, s := range ph.AllSteps() {
			total += s.Estimate
		}
		if total == 0 {
			total = ph.Estimate
		}
		if total > 0 {
			est = "about " + format.Duration(total)
		}
		fmt.Fprintf(stdout, "%2d. %-14s %s: %s, %s, %s", i+1, ph.ID, ph.Label(), kind, gpus, est)
		if len(ph.Needs) > 0 {
			fmt.Fprintf(stdout, ", after %s", strings.Join(ph.Needs, ", "))
		}
		if ph.Manual {
			fmt.Fprint(stdout, ", waits for a greenlight")
		}
		fmt.Fprintln(stdout)
	}
	// Which phases may share the machine, and which queue for GPUs.
	var lines []string
	for i, a := range plan.Phases {
		for _, b := range plan.Phases[i+1:] {
			if o := plan.Overlap(a, b); o != "" {
				lines = append(lines, fmt.Sprintf("  %s and %s %s", a.ID, b.ID, o))
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(stdout, "\nPhases not ordered by needs:\n%s\n", strings.Join(lines, "\n"))
	} else if len(plan.Phases) > 1 {
		fmt.Fprintln(stdout, "\nEvery phase is ordered by needs: one runs at a time.")
	}
	return 0
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	f, rest, err := parseRunFlags("report", args, stderr)
	if err != nil || len(rest) != 1 {
		fmt.Fprintln(stderr, "usage: greenlight report [--report PATH] [--state-dir DIR] CAMPAIGN.yaml")
		return 2
	}
	plan, ok := loadPlan(rest[0], stderr)
	if !ok {
		return 2
	}
	if f.report != "" {
		plan.Report, _ = filepath.Abs(f.report)
	}
	dir := f.stateDir
	if dir == "" {
		dir = runner.DefaultStateDir(plan)
	}
	st, err := runner.Replay(plan, dir)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight report: %v\n", err)
		return 1
	}
	env, err := report.LoadEnv(dir)
	if err != nil {
		host, _ := os.Hostname()
		env = report.Env{Host: host, Inventory: gpu.Inventory{Source: "none", Why: "GPU inventory " + err.Error()}}
	}
	w := report.NewWriter(plan.Report, plan, env, nil, dir)
	if err := w.Write(st); err != nil {
		fmt.Fprintf(stderr, "greenlight report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "rebuilt %s from %s\n", plan.Report, dir)
	return 0
}

func cmdTrace(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	top := fs.Int("top", 10, "")
	csvPath := fs.String("csv", "", "")
	files, err := parseAnywhere(fs, args)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight trace: %v\n\n%s", err, commandHelp["trace"])
		return exitUsage
	}
	if len(files) == 0 || *top < 1 || *top > 100 {
		fmt.Fprint(stderr, commandHelp["trace"])
		return exitUsage
	}
	progress := func(path string, read, of int64) {
		fmt.Fprintf(stderr, "greenlight trace: summarising %s, %s/%s\n", filepath.Base(path), format.Bytes(uint64(read)), format.Bytes(uint64(of)))
	}
	out, err := report.Traces(files, *top, *csvPath, progress)
	fmt.Fprint(stdout, out)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight trace: %v\n", err)
		return exitFailed
	}
	return exitOK
}
