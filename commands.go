package main

// greenlight validate and greenlight report: commands that run nothing.

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/report"
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
		gpus := "all GPUs"
		switch {
		case ph.GPUs != nil && len(ph.GPUs) == 0:
			gpus = "no GPU"
		case ph.GPUs != nil:
			gpus = "GPUs " + strings.Trim(fmt.Sprint(ph.GPUs), "[]")
		}
		if ph.Slurm != nil {
			gpus = "on Slurm (" + ph.Slurm.String() + ")"
		}
		est := "no estimate"
		if total := ph.Estimated(); total > 0 {
			est = "about " + format.Duration(total)
		}
		fmt.Fprintf(stdout, "%2d. %-14s %s: %s, %s, %s", i+1, ph.ID, ph.Label(), ph.Kind(), gpus, est)
		if len(ph.Waits()) > 0 {
			fmt.Fprintf(stdout, ", after %s", strings.Join(ph.Waits(), ", "))
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
	for _, h := range plan.Hints() {
		if w, ok := strings.CutPrefix(h, "warning: "); ok {
			fmt.Fprintf(stdout, "\nWarning: %s\n", w)
			continue
		}
		fmt.Fprintf(stdout, "\nHint: %s\n", h)
	}
	if plan.Compare.Baseline != "" {
		note, warn := daemon.BaselineWords(plan)
		if warn {
			note = "warning: " + note
		}
		fmt.Fprintf(stdout, "\nBaseline: %s\n", note)
	}
	return 0
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	// --versions and --version N are taken out before the run flags.
	var list bool
	version := 0
	var kept []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--versions" || a == "-versions":
			list = true
		case a == "--version" || a == "-version":
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "greenlight report: --version needs a number (see --versions)")
				return 2
			}
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "greenlight report: --version %q: want a version's number, as --versions lists them\n", args[i])
				return 2
			}
			version = n
		default:
			kept = append(kept, a)
		}
	}
	f, rest, err := parseRunFlags("report", kept)
	if err != nil || len(rest) != 1 {
		fmt.Fprintln(stderr, "usage: greenlight report [--report PATH] [--state-dir DIR] [--versions | --version N] CAMPAIGN.yaml")
		return 2
	}
	plan, ok := loadPlan(rest[0], stderr)
	if !ok {
		return 2
	}
	if err := locate(plan, &f.Config, stderr); err != nil {
		fmt.Fprintf(stderr, "greenlight report: %v\n", err)
		return 2
	}
	dir := f.StateDir
	if list || version > 0 {
		return client.ReportVersions(dir, version, stdout, stderr)
	}
	warns, err := daemon.Rebuild(plan, dir)
	for _, w := range warns {
		fmt.Fprintf(stderr, "greenlight report: warning: %s\n", w)
	}
	if err != nil {
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
