package tui

// The plain printer: the other way to watch a campaign, one line per
// event, for CI, scripts and the runner's own log (main's followPlain
// prints them as a client of the runner).

import (
	"fmt"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner"
)

func PlainLine(e runner.Event, lastETA *time.Duration) string {
	ts := e.Time.Format("15:04:05")
	if e.Kind == runner.Progress && e.Message != "" {
		return ts + " " + safe.Line(e.Message, safe.CSV) // a Slurm job's news
	}
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
		return fmt.Sprintf("%s %s: %s%sETA %s (%s)", ts, e.Phase, stage, prog, format.Duration(eta.Remaining), eta.Source)
	}
	if e.Message == "" {
		return ""
	}
	e.Message = safe.Line(e.Message, safe.CSV) // it may quote a step's output
	if e.Kind == runner.CampaignStarted || e.Kind == runner.PhaseFinished {
		if eta := e.State.ETA; eta.Known && !e.State.Finished {
			return fmt.Sprintf("%s %s (campaign ETA %s)", ts, e.Message, format.Duration(eta.Remaining))
		}
	}
	return ts + " " + e.Message
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
