package main

// The plain printer: the other way to watch a campaign, one line per
// event, for CI, scripts and the background monitor.

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/safe"
)

// runPlain prints one line per event until the campaign finishes. SIGINT
// stops the steps (a second one leaves them running); SIGTERM leaves them
// running; SIGHUP (a lost terminal) hands the campaign to the background
// monitor (leave). The background monitor itself ignores SIGHUP and leaves
// on SIGTERM, for a window that takes the campaign back.
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
