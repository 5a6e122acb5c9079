package main

// greenlight run: the campaign file to a runner, a results-file writer, a
// GPU sampler, and the window or the plain printer, wired.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/tui"
)

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
	var hupped atomic.Bool // the terminal went away (SIGHUP)
	leave := func() {
		leaveOnce.Do(func() {
			if !f.headless && !r.Snapshot().Finished {
				r.Close()
				<-reportDone
				// A demo whose window was lost has nobody left to press g:
				// its gate opens. One left on purpose (q, l) keeps its gate.
				if _, err := handOff(plan.File, f, r.StateDir(), demo && hupped.Load(), stdout); err != nil {
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

// feedSessions tells the sampler which sessions are the campaign's.
func feedSessions(s *gpu.Sampler, events <-chan runner.Event) {
	for e := range events {
		s.SetSessions(e.State.Sessions)
	}
}
