package runner

// The runner's event line: the other way to watch a campaign, one line per
// event, for CI, scripts (the plain client) and the runner's own log.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
)

// EventLine is e as one line of text, escaped; "" when e is not worth a
// line. lastETA is the last ETA said (-1: none yet): progress is said
// when it moved by a minute or more.
func EventLine(e Event, lastETA *time.Duration) string {
	ts := e.Time.Format("15:04:05")
	if e.Kind == Progress && e.Message != "" {
		return ts + " " + safe.Line(e.Message, safe.CSV) // a Slurm job's news
	}
	if e.Kind == Progress {
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
	if e.Kind == CampaignStarted || e.Kind == PhaseFinished {
		// Nothing left to time (the last phase just ended, a service is
		// being stopped): no "campaign ETA 0s" a moment before the end.
		if eta := e.State.ETA; eta.Known && !e.State.Finished && eta.Remaining >= time.Second {
			return fmt.Sprintf("%s %s (campaign ETA %s)", ts, e.Message, eta.Text()) // "≥ 5m" where a phase has no estimate
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
