// Command greenlight runs a GPU profiling or benchmark campaign in the
// background and is the window you keep open on it in tmux.
//
// main.go holds the flags, the subcommands and the wiring: it is the only
// place that knows every package.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/charmbracelet/x/term"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/safe"
	"github.com/greenlight-run/greenlight/tui"
)

// version is stamped by the release build (-X main.version=...).
var version = "dev"

const usage = `greenlight runs a GPU benchmark campaign in the background and shows it live.

Usage:
  greenlight run [flags] CAMPAIGN.yaml    run or resume a campaign
  greenlight validate CAMPAIGN.yaml       check a campaign file and print its plan
  greenlight report [flags] CAMPAIGN.yaml rebuild the results file from the state dir
  greenlight demo [flags]                 run the bundled demo (no GPU needed)
  greenlight gpus [--gpu S] [--json]      print what the GPU source reads now
  greenlight version                      print the version

` + runFlagsHelp + `
` + exitHelp

const runFlagsHelp = `Run flags:
  --plain            one line per event on stdout, no TUI (default when stdout is not a terminal)
  --gpu SOURCE       auto, nvml, fake:N or none (default auto: NVML when it loads), and
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
1 a phase failed; 2 bad input; 3 another greenlight already runs this campaign;
130 interrupted.
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

// Exit statuses, as the README documents them.
const (
	exitOK          = 0   // every phase done or skipped by the user; or the user detached on purpose
	exitFailed      = 1   // a phase failed or was blocked
	exitUsage       = 2   // bad input: campaign file, flags, arguments
	exitLocked      = 3   // another greenlight already runs this campaign
	exitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM, a lost terminal) before the end
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

Rebuilds the results file from the campaign's state dir (journal, step
folders, recorded GPU summaries and environment); runs nothing.
`,
	"demo": `Usage: greenlight demo [run flags]

Runs the bundled demo campaign with 8 fake GPUs and a simulated vLLM
server: no GPU, Python or network needed.
`,
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
	case runner.SuperviseCommand:
		return runner.SuperviseMain(args[1:])
	case demoServerCommand:
		return demoServer(args[1:])
	case demoClientCommand:
		return demoClient(args[1:])
	case "run":
		return cmdRun(args[1:], stdout, stderr, false)
	case "demo":
		return cmdDemo(args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "gpus":
		return cmdGPUs(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
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

type runFlags struct {
	plain    bool
	gpu      gpuFlag
	report   string
	stateDir string
	interval time.Duration
	approve  string
	fresh    bool
	headless bool // the background monitor a window hands a campaign to
}

func parseRunFlags(name string, args []string, stderr io.Writer) (*runFlags, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &runFlags{}
	fs.BoolVar(&f.plain, "plain", false, "")
	fs.Var(&f.gpu, "gpu", "")
	fs.StringVar(&f.report, "report", "", "")
	fs.StringVar(&f.stateDir, "state-dir", "", "")
	fs.DurationVar(&f.interval, "interval", time.Second, "")
	fs.StringVar(&f.approve, "approve", "", "")
	fs.BoolVar(&f.fresh, "fresh", false, "")
	fs.BoolVar(&f.headless, strings.TrimPrefix(headlessFlag, "--"), false, "")
	// Flags may come after the campaign file too.
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if f.interval < 100*time.Millisecond {
		return nil, nil, fmt.Errorf("--interval %s is below 100ms", f.interval)
	}
	return f, rest, nil
}

// gpuFlag collects --gpu, which may be given more than once: a source for
// this machine and dcgm-exporter lists for others.
type gpuFlag []string

func (g *gpuFlag) String() string     { return strings.Join(*g, " ") }
func (g *gpuFlag) Set(v string) error { *g = append(*g, v); return nil }

// openGPU opens the sources named (none named: auto) as one fleet. local
// says whether one of them reads this machine's GPUs, so their count can
// be checked; note says, once, why auto found none.
func openGPU(specs []string, interval time.Duration) (src gpu.Source, local bool, note string, err error) {
	if len(specs) == 0 {
		specs = []string{"auto"}
	}
	var parts gpu.Multi
	var remote []string
	var localSpec string
	defer func() {
		if err != nil {
			parts.Close()
		}
	}()
	for _, spec := range specs {
		if urls, ok := strings.CutPrefix(spec, "dcgm:"); ok {
			remote = append(remote, strings.Split(urls, ",")...)
			continue
		}
		if localSpec != "" {
			return nil, false, "", fmt.Errorf("--gpu %s and --gpu %s both read this machine's GPUs; keep one (add other nodes with dcgm:URL)", localSpec, spec)
		}
		localSpec = spec
		s, isLocal, n, err := openLocal(spec)
		if err != nil {
			return nil, false, "", err
		}
		parts, local, note = append(parts, s), isLocal, n
	}
	if len(remote) > 0 {
		d, err := gpu.OpenDCGM(remote, gpu.DCGMOptions{Wait: min(300*time.Millisecond, interval*3/10)})
		if err != nil {
			return nil, false, "", fmt.Errorf("--gpu dcgm: %v", err)
		}
		if localSpec == "auto" && !local {
			parts, note = nil, "" // auto found no GPU here: the remote ones are the fleet
		}
		parts = append(parts, d)
	}
	if len(parts) == 1 {
		return parts[0], local, note, nil
	}
	return parts, local, note, nil
}

func openLocal(spec string) (src gpu.Source, local bool, note string, err error) {
	switch {
	case spec == "none":
		return gpu.None{Why: "--gpu none"}, false, "", nil
	case spec == "nvml" || spec == "auto":
		n, err := gpu.OpenNVML(nvml.New())
		if err == nil {
			return n, true, "", nil
		}
		if spec == "nvml" {
			return nil, false, "", fmt.Errorf("--gpu nvml: %v", err)
		}
		return gpu.None{Why: err.Error()}, false, "no GPU telemetry: " + err.Error(), nil
	case spec == "fake" || strings.HasPrefix(spec, "fake:"):
		n := 8
		if s, ok := strings.CutPrefix(spec, "fake:"); ok {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v > 64 {
				return nil, false, "", fmt.Errorf("--gpu %s: give a count from 0 to 64, e.g. fake:8", spec)
			}
			n = v
		}
		return gpu.NewFake(n, 1), true, "", nil
	}
	return nil, false, "", fmt.Errorf("--gpu %q: use auto, nvml, fake:N, none or dcgm:URL[,URL...]", spec)
}

func loadPlan(path string, stderr io.Writer) (*runner.Plan, bool) {
	plan, err := runner.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		var fe runner.FileErrors
		if errors.As(err, &fe) {
			fmt.Fprintf(stderr, "%d problems; nothing was run.\n", len(fe))
		}
		return nil, false
	}
	return plan, true
}

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
		est := "no estimate"
		var total time.Duration
		for _, s := range ph.AllSteps() {
			total += s.Estimate
		}
		if total == 0 {
			total = ph.Estimate
		}
		if total > 0 {
			est = "about " + runner.FormatDuration(total)
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

func cmdRun(args []string, stdout, stderr io.Writer, demo bool) int {
	// The monitor runs on one core unless told otherwise: it is then never
	// more than one core's worth of competition for a benchmark on the
	// same machine, and its once-a-second work is done by one thread in
	// one wakeup instead of being handed between two (idle, side by side:
	// 0.38% vs 0.48% of a core).
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	f, rest, err := parseRunFlags("run", args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight run: %v\n\n%s", err, usage)
		return 2
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "greenlight run: give one campaign file\n\n%s", usage)
		return 2
	}
	plan, ok := loadPlan(rest[0], stderr)
	if !ok {
		return 2
	}
	if f.report != "" {
		abs, err := filepath.Abs(f.report)
		if err != nil {
			fmt.Fprintf(stderr, "greenlight: --report: %v\n", err)
			return 2
		}
		plan.Report = abs
	}
	specs := []string(f.gpu)
	if len(specs) == 0 {
		specs = plan.GPUSources // --gpu overrides the campaign's sources
	}
	src, local, note, err := openGPU(specs, f.interval)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return 2
	}
	sampler := gpu.NewSampler(src, f.interval, 4*time.Hour)
	inv := sampler.Inventory()
	count := -1 // phases name this machine's GPUs; remote ones are not counted
	if local {
		count = 0
		for _, d := range inv.Devices {
			if d.Host == "" {
				count++
			}
		}
	}
	problems := runner.CheckPreflight(plan, count)
	var preflightNotes []string
	for _, p := range problems {
		if p.Warn {
			preflightNotes = append(preflightNotes, "preflight: "+p.What)
		}
	}
	if err := runner.PreflightError(problems); err != nil {
		for _, n := range preflightNotes {
			fmt.Fprintf(stderr, "greenlight: warning: %s\n", n)
		}
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return exitFailed
	}
	approve, err := approveList(plan, f.approve)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight run: --approve: %v\n", err)
		return exitUsage
	}
	plain := f.plain || !term.IsTerminal(os.Stdout.Fd())
	if demo && plain {
		approve = append(approve, "all") // nobody is there to press g
	}
	if f.fresh {
		if code := startOver(plan, f.stateDir, stdout, stderr); code != exitOK {
			return code
		}
	}
	stateDir := f.stateDir
	if stateDir == "" {
		stateDir = runner.DefaultStateDir(plan)
	}
	opts := runner.Options{StateDir: stateDir, GPUCount: count, Approve: approve, Notes: preflightNotes}
	r, err := runner.New(plan, opts)
	if errors.Is(err, runner.ErrLocked) && !f.headless && takeOver(stateDir, stdout) {
		r, err = runner.New(plan, opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		if errors.Is(err, runner.ErrLocked) {
			return exitLocked
		}
		return exitFailed
	}
	host, _ := os.Hostname()
	w := report.NewWriter(plan.Report, plan, report.Env{Host: host, Inventory: inv}, sampler, r.StateDir())
	reportEvents, uiEvents := r.Subscribe(), r.Subscribe()
	reportErrs := make(chan error, 16)
	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		w.Run(reportEvents, func(err error) {
			select {
			case reportErrs <- err:
			default:
			}
		})
	}()
	// The results file must hold the last state before we exit.
	defer func() { r.Close(); <-reportDone }()
	// Leaving a campaign that is not over hands it to a background
	// monitor, so the queue goes on (see handoff.go).
	var leaveOnce sync.Once
	leave := func() {
		leaveOnce.Do(func() {
			if !f.headless && !r.Snapshot().Finished {
				r.Close()
				<-reportDone
				if _, err := handOff(plan.File, f, r.StateDir(), stdout); err != nil {
					fmt.Fprintf(stderr, "greenlight: could not start the background monitor (%v): running steps go on, later phases wait for `greenlight run %s`\n", err, plan.File)
				}
			}
		})
	}
	sampler.Start()
	defer sampler.Stop()
	if fake, ok := src.(*gpu.Fake); ok {
		go feedFake(fake, len(inv.Devices), r.Subscribe(), plan)
	}
	go feedSessions(sampler, r.Subscribe())
	r.Start()
	if note != "" && plain {
		fmt.Fprintln(stdout, "greenlight:", note)
	}
	if plain {
		return runPlain(r, uiEvents, reportErrs, stdout, f.headless, leave)
	}
	// A lost terminal (ssh drop, tmux killed) hands the campaign on too.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var hupped atomic.Bool
	go func() {
		if _, ok := <-hup; ok {
			hupped.Store(true)
			leave()
			os.Exit(exitInterrupted)
		}
	}()
	errPath := filepath.Join(r.StateDir(), "monitor-stderr.log")
	restoreStderr, cerr := captureStderr(errPath)
	res, err := tui.Run(tui.Options{Runner: r, Events: uiEvents, Sampler: sampler, Plan: plan, ReportPath: plan.Report,
		StateDir: r.StateDir(), Note: note, ReportErrors: reportErrs})
	if cerr == nil {
		if said := restoreStderr(); said != "" {
			fmt.Fprintf(stderr, "greenlight: written to stderr while the screen was up (kept in %s):\n%s\n", errPath, strings.TrimRight(said, "\n"))
		}
	}
	if hupped.Load() {
		leave() // returns once the hand-off has been made
		return exitInterrupted
	}
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: the screen failed (%v); `greenlight run %s` re-attaches\n", err, rest[0])
		leave()
		return exitFailed
	}
	fmt.Fprintln(stdout, res.Message)
	fmt.Fprintf(stdout, "results: %s\n", plan.Report)
	if res.Detached {
		leave()
		return exitCode(res.Final, false, true)
	}
	r.Close()
	return exitCode(res.Final, res.Interrupted, false)
}

// startOver sets a campaign's old state and results aside for --fresh.
func startOver(plan *runner.Plan, stateDir string, stdout, stderr io.Writer) int {
	if stateDir == "" {
		stateDir = runner.DefaultStateDir(plan)
	}
	now := time.Now()
	dest, err := runner.SetAside(stateDir, now)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight run --fresh: %v\n", err)
		if errors.Is(err, runner.ErrLocked) {
			return exitLocked
		}
		return exitFailed
	}
	if dest != "" {
		fmt.Fprintf(stdout, "greenlight: the old state is kept in %s\n", dest)
	}
	moved, err := report.SetAside(plan.Report, plan, now)
	for _, m := range moved {
		fmt.Fprintf(stdout, "greenlight: the old results are kept in %s\n", m)
	}
	if err != nil {
		fmt.Fprintf(stderr, "greenlight run --fresh: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// approveList checks --approve's phase ids like needs: an unknown one is
// bad input, with the nearest id, never a gate that waits forever.
func approveList(plan *runner.Plan, flag string) ([]string, error) {
	if strings.TrimSpace(flag) == "" {
		return nil, nil
	}
	var ids []string
	for _, id := range strings.Split(flag, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if id != "all" {
			if err := plan.CheckPhaseID(id); err != nil {
				return nil, err
			}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// exitCode is the documented exit status for how the campaign stands when
// greenlight leaves it: a failed phase first; then a campaign left running
// on purpose (detached) is 0 and one cut short is 130.
func exitCode(st *runner.State, interrupted, detached bool) int {
	if st == nil {
		if detached {
			return exitOK
		}
		return exitInterrupted
	}
	if st.Failed() {
		return exitFailed
	}
	if detached {
		return exitOK
	}
	if interrupted || !st.Finished || st.Stopped() {
		return exitInterrupted
	}
	return exitOK
}

// runPlain prints one line per event until the campaign finishes. SIGINT
// stops the steps; SIGHUP and SIGTERM leave them running.
func runPlain(r *runner.Runner, events <-chan runner.Event, reportErrs <-chan error, out io.Writer, headless bool, leave func()) int {
	// A reader that goes away (`| head`) must not end the campaign's
	// monitor: the lines are lost, the campaign and its record are not.
	signal.Ignore(syscall.SIGPIPE)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var lastETA time.Duration = -1
	interrupted := false
	for {
		select {
		case err := <-reportErrs:
			fmt.Fprintf(out, "%s warning: results file: %v\n", time.Now().Format("15:04:05"), err)
		case s := <-sigs:
			if s == syscall.SIGINT {
				fmt.Fprintf(out, "%s interrupted: stopping the running steps (Ctrl-C again leaves them running)\n", time.Now().Format("15:04:05"))
				if interrupted {
					r.Close()
					return 130
				}
				interrupted = true
				go r.Stop()
				continue
			}
			if headless {
				// A window takes the campaign back (SIGTERM), or the machine
				// shuts down; a lost terminal is not ours (SIGHUP ignored).
				if s == syscall.SIGHUP {
					continue
				}
				fmt.Fprintf(out, "%s got %v: leaving the campaign to the window that takes it back\n", time.Now().Format("15:04:05"), s)
				r.Close()
				return exitOK
			}
			fmt.Fprintf(out, "%s got %v: leaving the steps running\n", time.Now().Format("15:04:05"), s)
			if s == syscall.SIGHUP {
				leave()
			} else {
				r.Close()
			}
			return exitInterrupted
		case e, ok := <-events:
			if !ok {
				return 130
			}
			if line := plainLine(e, &lastETA); line != "" {
				fmt.Fprintln(out, line)
			}
			if e.Kind == runner.CampaignFinished {
				r.Close()
				for range events {
				}
				return exitCode(e.State, interrupted, false)
			}
		}
	}
}

func plainLine(e runner.Event, lastETA *time.Duration) string {
	ts := e.Time.Format("15:04:05")
	if e.Kind == runner.Progress {
		ps := e.State.Phase(e.Phase)
		if ps == nil || e.Step >= len(ps.Steps) {
			return ""
		}
		eta := ps.Steps[e.Step].ETA
		if !eta.Known {
			return ""
		}
		if *lastETA >= 0 && absDur(eta.Remaining-*lastETA) < time.Minute {
			return ""
		}
		*lastETA = eta.Remaining
		stage := ps.Steps[e.Step].Stage
		if stage != "" {
			stage += ", "
		}
		prog := ""
		if eta.Total > 0 {
			prog = fmt.Sprintf("%s/%s, ", trimNum(eta.Done), trimNum(eta.Total))
		}
		return fmt.Sprintf("%s %s: %s%sETA %s (%s)", ts, e.Phase, stage, prog, runner.FormatDuration(eta.Remaining), eta.Source)
	}
	if e.Message == "" {
		return ""
	}
	e.Message = safe.Line(e.Message, safe.CSV) // it may quote a step's output
	if e.Kind == runner.CampaignStarted || e.Kind == runner.PhaseFinished {
		if eta := e.State.ETA; eta.Known && !e.State.Finished {
			return fmt.Sprintf("%s %s (campaign ETA %s)", ts, e.Message, runner.FormatDuration(eta.Remaining))
		}
	}
	return ts + " " + e.Message
}

func trimNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
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

// feedSessions tells the sampler which sessions are the campaign's.
func feedSessions(s *gpu.Sampler, events <-chan runner.Event) {
	for e := range events {
		s.SetSessions(e.State.Sessions)
	}
}

// feedFake drives the fake fleet from what the campaign does, so the
// demo's gauges move with it.
func feedFake(f *gpu.Fake, n int, events <-chan runner.Event, plan *runner.Plan) {
	for e := range events {
		a := gpu.Activity{Devices: map[int]gpu.Load{}}
		for _, p := range e.State.Phases {
			ph := plan.Phase(p.ID)
			gpus := ph.GPUs
			if gpus == nil {
				gpus = make([]int, n)
				for i := range gpus {
					gpus[i] = i
				}
			}
			var pids []int
			if p.Status == runner.Running || p.Status == runner.Ready {
				if pg := p.Steps[p.Current].PGID; pg > 0 {
					pids = []int{pg}
				}
			}
			for _, g := range gpus {
				l, ok := a.Devices[g]
				if !ok {
					l.Loading = -1
				}
				switch {
				case ph.Service != nil && p.Status == runner.Running:
					l.Loading = max(0, p.Steps[0].Progress)
				case ph.Service != nil && p.Status == runner.Ready:
					l.ServiceUp = true
				case p.Status == runner.Running && ph.Service == nil:
					// A client of a service loads the service's GPUs.
					l.Busy = true
				default:
					continue
				}
				l.PIDs = append(l.PIDs, pids...)
				a.Devices[g] = l
			}
		}
		f.SetActivity(a)
	}
}
