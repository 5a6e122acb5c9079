package main

// greenlight validate and greenlight report: commands that run nothing.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/daemon"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner"
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
		return reportVersions(dir, version, stdout, stderr)
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
	w.SetServers(daemon.KeptServers(plan, dir))
	if book, ok, err := conditions.Load(dir); err != nil {
		fmt.Fprintf(stderr, "greenlight report: warning: %v; the record has no conditions\n", err)
	} else if ok {
		w.SetConditions(book)
	}
	if note, warn := daemon.GiveBaseline(plan, w); warn {
		fmt.Fprintf(stderr, "greenlight report: warning: %s\n", note)
	}
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

// reportVersions lists the versions of the results file kept in the state
// dir, or prints version n.
func reportVersions(dir string, n int, stdout, stderr io.Writer) int {
	list, err := mdfile.ListVersions(dir)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight report: %v\n", err)
		return 1
	}
	if n > 0 {
		for _, v := range list {
			if v.N == n {
				b, err := os.ReadFile(v.Path)
				if err != nil {
					fmt.Fprintf(stderr, "greenlight report: %v\n", err)
					return 1
				}
				stdout.Write(b)
				return 0
			}
		}
		fmt.Fprintf(stderr, "greenlight report: no version %d in %s (greenlight report --versions lists them)\n", n, filepath.Join(dir, "versions"))
		return 2
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no version of the results file kept in %s: no write has replaced a save of yours\n", dir)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tkept at\tsize\tlines\twhat it is")
	for _, v := range list {
		lines := 0
		if b, err := os.ReadFile(v.Path); err == nil {
			lines = strings.Count(string(b), "\n")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", v.N, v.Time.Local().Format("2006-01-02 15:04:05.000"), format.Bytes(uint64(v.Size)), lines, mdfile.WhyKept(v.Why))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d versions in %s; get one back with: greenlight report --version N CAMPAIGN.yaml > recovered.md\n", len(list), filepath.Join(dir, "versions"))
	return 0
}
