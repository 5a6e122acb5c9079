// Command greenlight runs a GPU profiling or benchmark campaign in the
// background and is the window you keep open on it in tmux.
//
// The root package holds the commands: their flags, help and output.
// The runner process is package daemon, the way to reach it package
// client, the window package tui.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/greenlight-run/greenlight/runner/link"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/demo"
	"github.com/greenlight-run/greenlight/history"
	"github.com/greenlight-run/greenlight/internal/statedir"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// version is stamped by the release build (-X main.version=...).
var version = "dev"

const usage = `greenlight runs a GPU benchmark campaign in the background and shows it live.

Usage:
  greenlight run [flags] CAMPAIGN.yaml    run or resume a campaign, and watch it
  greenlight validate CAMPAIGN.yaml       check a campaign file and print its plan
  greenlight status [--json] CAMPAIGN.yaml how a campaign stands, and who runs it
  greenlight approve CAMPAIGN.yaml PHASE...  open manual gates
  greenlight pause|resume CAMPAIGN.yaml   hold the queue after the running steps / let it go on
  greenlight skip|retry CAMPAIGN.yaml PHASE  skip a phase (stopping it; --point P: one sweep point) / run it again
  greenlight stop CAMPAIGN.yaml           stop the campaign and its running steps
  greenlight logs [-f] CAMPAIGN.yaml [PHASE]  print the steps' logs; -f follows them
  greenlight note CAMPAIGN.yaml TEXT...       add a timestamped note to the record (through its runner)
  greenlight report [flags] CAMPAIGN.yaml rebuild the results file from the state dir
  greenlight report --versions CAMPAIGN.yaml  the versions of your results file that writes replaced
  greenlight trace [--top N] [--csv F] TRACE...  where the GPU time went in profiler traces
  greenlight compare [flags] OLD NEW      better or worse than last time, and is it noise?
  greenlight history [flags] DIR...       where each metric moved over many campaigns, and with what
  greenlight demo [flags]                 run the bundled demo (no GPU needed)
  greenlight gpus [--gpu S] [--json]      print what the GPU source reads now
  greenlight version                      print the version

` + runFlagsHelp + `
` + exitHelp

const runFlagsHelp = `Run flags:
  --plain            one line per event on stdout, no TUI (default when stdout is not a terminal);
                     follows the campaign to its end and exits with its status
  --detach           start the campaign's runner (or find it) and return at once
  --gpu SOURCE       auto, nvml, fake:N[:MODEL] (fake:8:rtx-pro-6000) or none (default auto), and
                     dcgm:URL[,URL...] for other nodes' dcgm-exporters; repeat to combine
                     (overrides the campaign's gpus.sources)
  --report PATH      results file (default: the campaign's report:)
  --state-dir DIR    journal, logs and artifacts (default: .greenlight/NAME beside the report)
  --interval DUR     GPU sampling period, 100ms or more (default 1s)
  --approve IDS      open these manual gates up front (comma list of phase ids, or all)
  --fresh            start the campaign over: its old state dir and results file are
                     kept aside with a timestamp in their names, never deleted
`

const exitHelp = `Exit status: 0 every phase done or skipped by you, or you detached and left it running;
1 a phase failed (or the runner could not start: its words are printed); 2 bad input
(and a verb on a campaign that never ran, an unknown phase, or a verb its phase is past); 3 the campaign is held
by a greenlight this one cannot talk to (another version, another user); 130 interrupted.
`

func main() {
	// GREENLIGHT_CPUPROFILE=FILE writes a CPU profile of the monitor, for
	// checking the idle-CPU budget.
	if path := os.Getenv("GREENLIGHT_CPUPROFILE"); path != "" && len(os.Args) > 1 && os.Args[1] == "run" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses, as the README documents them (runner.Exit*).
const (
	exitOK          = runner.ExitOK
	exitFailed      = runner.ExitFailed
	exitUsage       = runner.ExitUsage
	exitLocked      = runner.ExitLocked
	exitInterrupted = runner.ExitInterrupted
)

// commandHelp is each command's own help, for -h and --help.
var commandHelp = map[string]string{
	"run": `Usage: greenlight run [flags] CAMPAIGN.yaml

Runs the campaign, or resumes it from its state dir, and shows it live.
`,
	"validate": `Usage: greenlight validate CAMPAIGN.yaml

Checks the campaign file and prints its plan; runs nothing. Exit 0 when the
file is valid, 2 when it is not.
`,
	"report": `Usage: greenlight report [--report PATH] [--state-dir DIR] CAMPAIGN.yaml
       greenlight report --versions CAMPAIGN.yaml
       greenlight report --version N CAMPAIGN.yaml > recovered.md

Rebuilds the results file from the campaign's state dir (journal, step
folders, recorded GPU summaries and environment); runs nothing.

Every version of the results file that a write read and then replaced (the
user's saves, a file deleted, a save made in a file greenlight had just
replaced) is kept in the state dir's versions/ folder, the last 200 or
20 MiB. --versions lists them, newest last; --version N prints one, to get
back a line that a merge lost.
`,
	"demo": `Usage: greenlight demo [run flags]

Runs the bundled demo campaign with 8 fake GPUs and a simulated vLLM
server: no GPU, Python or network needed.
`,
	"status": `Usage: greenlight status [--json] [--state-dir DIR] CAMPAIGN.yaml

How the campaign stands: each phase's status, progress and ETA (with where
the ETA comes from), results counted, why a phase waits (a gate: how to
open it), and the runner's pid. From the runner itself when one runs the
campaign; from the journal when none does (or it does not answer within
2 s, which is said). Runs and signals nothing. --json prints the
greenlight.status/v3 schema (schema/status.schema.json; see the README). Exit 0; 2 when the campaign
has not run here.
`,
	"approve": `Usage: greenlight approve CAMPAIGN.yaml PHASE...

Opens the manual gates of these phases (a phase whose gate is not reached
yet passes it when it comes). Starts the campaign's runner when none runs
and the campaign is not finished (it resumes from the journal).
`,
	"note": `Usage: greenlight note [--state-dir DIR] CAMPAIGN.yaml TEXT...

Adds a timestamped note to the Notes of the campaign's record: through its
runner when one runs it, else into its journal, the record then rebuilt.
Notes are facts of the journal: report and --fresh keep them.
`,
	"pause": `Usage: greenlight pause CAMPAIGN.yaml

Holds the queue: the running steps finish, no new one starts.
`,
	"resume": `Usage: greenlight resume CAMPAIGN.yaml

Lets a paused (or frozen) queue go on.
`,
	"skip": `Usage: greenlight skip CAMPAIGN.yaml PHASE [--point AXIS=VALUE[,AXIS=VALUE]]

Skips the phase; a running one is stopped first. With --point, skips only
those points of a sweep phase (as GREENLIGHT_POINT names them; an axis left
out takes every value: --point m=64 skips M=64 at every shape): their runs
not started are skipped, a running one is stopped, and the phase goes on
with its other points. A resumed campaign keeps them skipped. Of a failed
phase, skip lets it go: it stays failed, no service is kept up for it, and
it does not run again when the campaign runs.
`,
	"retry": `Usage: greenlight retry CAMPAIGN.yaml PHASE [--point AXIS=VALUE[,AXIS=VALUE]]

Runs a finished, failed or skipped phase again from its first step. With
--point, runs only those points of a sweep phase again (as GREENLIGHT_POINT
names them), as a new attempt that keeps every other run as it ended: the
done ones, and, in a grid with on_failure: continue, the failed ones.
`,
	"stop": `Usage: greenlight stop CAMPAIGN.yaml

Stops the campaign: its running steps and services are stopped (SIGINT,
then SIGTERM, then SIGKILL), and its runner ends once they have.
`,
	"logs": `Usage: greenlight logs [-f] CAMPAIGN.yaml [PHASE]

Prints the logs of the campaign's steps (of PHASE only, when given), each
under a header. -f then follows the running step's log, and the next
step's as it starts, until the campaign ends (Ctrl-C leaves).
`,
	"trace": `Usage: greenlight trace [--top N] [--csv FILE] TRACE...

Summarises torch.profiler Chrome traces (*.pt.trace.json[.gz], one per
rank) and nsys reports (*.nsys-rep, through nsys stats) as the results
file does: GPU kernel time per rank, busy fraction and idle gaps, time by
category, the top kernels; markdown on stdout. --csv writes the top
kernels with their full names. Exit 0 when every trace was read whole;
1 when one was read only in part (truncated, damaged) or not at all: the
summary says which, and covers what was read.
`,
	"compare": compare.Help,
	"history": history.Help,
	"gpus": `Usage: greenlight gpus [--gpu SOURCE] [--json] [--samples N] [--interval DUR]

Prints what the GPU source reads now.
`,
}

// wantsHelp reports whether args ask for help before anything else.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if help, ok := commandHelp[args[0]]; ok && wantsHelp(args[1:]) {
		fmt.Fprint(stdout, help)
		if args[0] == "run" || args[0] == "demo" {
			fmt.Fprint(stdout, "\n"+runFlagsHelp+"\n"+exitHelp)
		}
		return exitOK
	}
	switch args[0] {
	case supervise.Command:
		return supervise.Main(args[1:])
	case link.Command:
		return daemon.Main(version, args[1:], stdout, stderr)
	case demo.ServerCommand:
		return demo.Server(args[1:])
	case demo.ClientCommand:
		return demo.Client(args[1:])
	case "run":
		return cmdRun(args[1:], stdout, stderr, false)
	case "demo":
		return cmdDemo(args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "gpus":
		return cmdGPUs(args[1:], stdout, stderr)
	case "status":
		return cmdStatus(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "approve", "pause", "resume", "skip", "retry", "stop":
		return cmdControl(args[0], args[1:], stdout, stderr)
	case "logs":
		return cmdLogs(args[1:], stdout, stderr)
	case "note":
		return cmdNote(args[1:], stdout, stderr)
	case "trace":
		return cmdTrace(args[1:], stdout, stderr)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "history":
		return history.Command(args[1:], parseAnywhere, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "greenlight", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "greenlight: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// runFlags are run's and demo's flags: how to start the runner (shared
// with it, link.Config) and how to watch it.
type runFlags struct {
	link.Config
	plain  bool
	fresh  bool
	detach bool // start the runner and return
}

func parseRunFlags(name string, args []string) (*runFlags, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &runFlags{}
	f.Register(fs)
	fs.BoolVar(&f.plain, "plain", false, "")
	fs.BoolVar(&f.fresh, "fresh", false, "")
	fs.BoolVar(&f.detach, "detach", false, "")
	rest, err := parseAnywhere(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Check(fs); err != nil {
		return nil, nil, err
	}
	return f, rest, nil
}

// parseAnywhere parses args with fs, flags before, between or after the
// positional arguments (`greenlight run c.yaml --plain`), and returns those.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return rest, nil
}

func loadPlan(path string, stderr io.Writer) (*campaign.Plan, bool) {
	plan, err := campaign.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		var fe campaign.FileErrors
		if errors.As(err, &fe) {
			fmt.Fprintf(stderr, "%d problems; nothing was run.\n", len(fe))
		}
		return nil, false
	}
	return plan, true
}

// locate resolves where a command finds the campaign: its state dir
// (statedir.Resolve) and its results file (--report, else the one its
// last runner was started with, else the campaign's report:). What it
// took from the last runner is said on notes.
func locate(plan *campaign.Plan, cfg *link.Config, notes io.Writer) error {
	dir, note, err := statedir.Resolve(plan, cfg.StateDir)
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintf(notes, "greenlight: %s\n", note)
	}
	cfg.StateDir = dir
	switch saved := link.SavedReport(dir); {
	case cfg.Report != "":
		abs, err := filepath.Abs(cfg.Report)
		if err != nil {
			return fmt.Errorf("--report: %v", err)
		}
		cfg.Report = abs
	case saved != "" && saved != plan.Report:
		cfg.Report = saved
		fmt.Fprintf(notes, "greenlight: --report %s, as the campaign was started with (give --report to change it)\n", saved)
	}
	if cfg.Report != "" {
		plan.Report = cfg.Report
	}
	return nil
}
