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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/tui"
)

func cmdRun(args []string, stdout, stderr io.Writer, demo bool) int {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1) // a window is one core's worth of competition at most
	}
	f, rest, err := parseRunFlags("run", args)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight run: %v\n\n%s", err, usage)
		return exitUsage
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "greenlight run: give one campaign file\n\n%s", usage)
		return exitUsage
	}
	f.Demo = demo
	plan, ok := loadPlan(rest[0], stderr)
	if !ok {
		return exitUsage
	}
	if _, err := daemon.ApproveList(plan, f.Approve); err != nil {
		fmt.Fprintf(stderr, "greenlight run: --approve: %v\n", err)
		return exitUsage
	}
	plain := f.plain || !term.IsTerminal(os.Stdout.Fd())
	var sigs chan os.Signal
	if plain && !f.detach { // before the runner is reached: a Ctrl-C while attaching waits for followPlain
		sigs = make(chan os.Signal, 2)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	}
	if demo && plain && f.Approve == "" {
		f.Approve = "all" // nobody is there to press g
	}
	if err := locate(plan, &f.Config, stdout); err != nil {
		fmt.Fprintf(stderr, "greenlight run: %v\n", err)
		return exitUsage
	}
	stateDir := f.StateDir
	if f.fresh {
		if c, err := link.Dial(stateDir); err == nil {
			fmt.Fprintf(stderr, "greenlight run --fresh: the campaign's runner (pid %d) is running it; `greenlight stop %s` first\n", c.PID(), plan.File)
			c.Close()
			return exitLocked
		}
		// The flags the campaign ran with are read before its state dir
		// goes aside, and the new runner keeps them (said).
		f.Config.Reuse(stdout)
		if code := startOver(plan, stateDir, stdout, stderr); code != exitOK {
			return code
		}
	}
	c, started, code := client.Attach(plan, &f.Config, stdout, stderr)
	if c == nil {
		return code
	}
	s := client.NewSession(runner.Journal{}, plan, &f.Config, c, stdout)
	edited := ""
	if !started && c.Hello.Plan != "" && c.Hello.Plan != plan.Hash {
		edited = fmt.Sprintf("%s changed since its runner (pid %d) started: the runner goes on with the file as it was; `greenlight stop` then `greenlight run` takes the edits (finished phases whose work did not change are kept)", plan.File, c.PID())
	}
	if !started {
		ids, _ := daemon.ApproveList(plan, f.Approve)
		if err := s.Approve(ids); err != nil {
			fmt.Fprintf(stderr, "greenlight run: --approve: %v\n", err)
		}
	}
	if f.detach {
		fmt.Fprintf(stdout, "greenlight: the campaign runs in the background (runner pid %d, its lines in %s)\n", c.PID(), client.RunnerLog(stateDir))
		fmt.Fprintf(stdout, "greenlight: `greenlight run %s` attaches a window; `greenlight status %s` says how it stands\n", plan.File, plan.File)
		s.Close()
		return exitOK
	}
	go s.Run()
	if plain {
		// Ctrl-C stops the campaign only in the client that started it: a
		// second session that attached to watch must not end a
		// 36-minute load with it.
		if started {
			fmt.Fprintf(stdout, "%s greenlight: started the campaign's runner (pid %d); Ctrl-C stops the campaign, Ctrl-C again leaves it running\n",
				time.Now().Format("15:04:05"), c.PID())
		} else {
			fmt.Fprintf(stdout, "%s greenlight: attached to the campaign's runner (pid %d), started elsewhere; Ctrl-C detaches this client and leaves the campaign running (`greenlight stop %s` stops it)\n",
				time.Now().Format("15:04:05"), c.PID(), plan.File)
		}
		if edited != "" {
			fmt.Fprintf(stdout, "%s greenlight: %s\n", time.Now().Format("15:04:05"), edited)
		}
		var lastETA time.Duration = -1
		for _, e := range s.Earlier() {
			if line := runner.EventLine(e, &lastETA); line != "" {
				fmt.Fprintln(stdout, line)
			}
		}
		return followPlain(s, stdout, started, sigs)
	}
	// A lost terminal (ssh drop, tmux killed) detaches this window only.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP, syscall.SIGTERM)
	defer signal.Stop(hup)
	go func() {
		if _, ok := <-hup; ok {
			s.Close()
			os.Exit(exitInterrupted)
		}
	}()
	errPath := runner.Layout(stateDir).WindowStderr()
	restoreStderr, cerr := tui.CaptureStderr(errPath)
	res, err := tui.Run(tui.Options{Runner: s, Events: s.Events(), Sampler: s, Plan: plan, ReportPath: plan.Report,
		StateDir: stateDir, Note: joinNotes(gpuNote(s.Inventory()), edited), Earlier: s.Earlier()})
	if cerr == nil {
		if said := restoreStderr(); said != "" {
			fmt.Fprintf(stderr, "greenlight: written to stderr while the screen was up (kept in %s):\n%s\n", errPath, strings.TrimRight(said, "\n"))
		}
	}
	if res.Final != nil && res.Final.Finished {
		// The window saw the end; the results file's last write follows it.
		select {
		case <-s.Ended():
		case <-time.After(10 * time.Second):
		}
	}
	s.Close()
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: the screen failed (%v); the campaign goes on; `greenlight run %s` attaches again\n", err, rest[0])
		return exitFailed
	}
	fmt.Fprintln(stdout, res.Message)
	fmt.Fprintf(stdout, "results: %s\n", plan.Report)
	if res.Detached {
		fmt.Fprintf(stdout, "greenlight: the campaign goes on (runner pid %d); `greenlight run %s` attaches again\n", c.PID(), plan.File)
		return res.Final.ExitCode(false, true)
	}
	return res.Final.ExitCode(res.Interrupted, false)
}

// joinNotes is the notes that are not empty, one line.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// gpuNote is said once in the window when the runner sees no GPU.
func gpuNote(inv gpu.Inventory) string {
	if len(inv.Devices) == 0 && inv.Why != "" {
		return "no GPU: " + inv.Why
	}
	return ""
}

// followPlain prints one line per event until the campaign ends, and exits
// with its status. In the client that started the runner, Ctrl-C stops
// the campaign (its running steps too); a second Ctrl-C, SIGTERM or a
// lost terminal (SIGHUP) detach, leaving it running. A client that
// attached to a runner started elsewhere detaches at the first Ctrl-C.
func followPlain(s *client.Session, out io.Writer, started bool, sigs chan os.Signal) int {
	// A reader that goes away (`| head`) must not end the campaign: it
	// lives in the runner; only these lines are lost.
	signal.Ignore(syscall.SIGPIPE)
	// sigs is never stopped: a Ctrl-C after this returns must not kill
	// the process by the default handler, losing its exit status.
	var lastETA time.Duration = -1
	interrupted := false
	var final *runner.State
	for {
		select {
		case sig := <-sigs:
			ts := time.Now().Format("15:04:05")
			if sig == syscall.SIGINT && !interrupted && started {
				fmt.Fprintf(out, "%s interrupted: stopping the campaign's running steps (Ctrl-C again leaves them running)\n", ts)
				interrupted = true
				go s.Stop()
				continue
			}
			fmt.Fprintf(out, "%s got %v: leaving the campaign running in its runner; `greenlight run %s` attaches again\n", ts, sig, s.Plan().File)
			s.Close()
			return exitInterrupted
		case e, ok := <-s.Events():
			if !ok {
				if final == nil {
					return exitInterrupted
				}
				return final.ExitCode(interrupted, false)
			}
			if line := runner.EventLine(e, &lastETA); line != "" {
				fmt.Fprintln(out, line)
			}
			if e.Kind == runner.CampaignFinished || e.State != nil && e.State.Finished {
				final = e.State
			}
		}
	}
}

// startOver sets a campaign's old state and results aside for --fresh.
func startOver(plan *campaign.Plan, stateDir string, stdout, stderr io.Writer) int {
	a, err := report.SetAside(plan, stateDir, time.Now())
	if err != nil && a == nil {
		fmt.Fprintf(stderr, "greenlight run --fresh: %v\n", err)
		if errors.Is(err, runner.ErrLocked) {
			return exitLocked
		}
		return exitFailed
	}
	if len(a.Stopped) > 0 {
		fmt.Fprintf(stdout, "greenlight: the last run left %d process(es) running (its runner was killed): stopped them first: %s\n", len(a.Stopped), strings.Join(a.Stopped, ", "))
	}
	if len(a.Files) > 0 || a.State || len(a.Artifacts) > 0 {
		fmt.Fprintf(stdout, "greenlight: the last run is set aside in %s: %s\n", a.Dir, a)
		if slices.Contains(a.Files, filepath.Base(plan.Report)) {
			fmt.Fprintf(stdout, "greenlight: the notes you wrote in %s went with it: %s\n", filepath.Base(plan.Report), filepath.Join(a.Dir, filepath.Base(plan.Report)))
		}
	} else {
		os.Remove(a.Dir) // nothing was there
	}
	if err != nil {
		fmt.Fprintf(stderr, "greenlight run --fresh: some of the last run stayed where it was: %v\n", err)
		return exitFailed
	}
	return exitOK
}
