package runner

import (
	"strings"
	"testing"
	"time"
)

// TestEventLineSaysSlurmNews: a Progress event carries a message only
// for news worth a line (a Slurm job submitted, queued for a reason,
// running); the plain printer prints it, escaped, and stays quiet about
// bare progress whose ETA is not known.
func TestEventLineSaysSlurmNews(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	st := &State{Phases: []PhaseState{{ID: "gemm", Steps: []StepState{{Progress: -1}}}}}
	last := time.Duration(-1)
	news := Event{Kind: Progress, Time: at, Phase: "gemm", State: st,
		Message: "gemm: Slurm job 42 PENDING (Resources) \x1b[31m· starts ~14:05 (Slurm)"}
	got := EventLine(news, &last)
	if !strings.HasPrefix(got, "14:00:00 gemm: Slurm job 42 PENDING (Resources)") || strings.Contains(got, "\x1b") {
		t.Errorf("news line %q", got)
	}
	bare := Event{Kind: Progress, Time: at, Phase: "gemm", State: st}
	if got := EventLine(bare, &last); got != "" {
		t.Errorf("bare progress with no ETA printed %q", got)
	}
}

// TestNoCampaignETAOfZero: a phase's end with time left says the
// campaign's ETA; the last phase's end, with nothing left to time, says
// no "campaign ETA 0s"; where a phase left has no estimate, the ETA is a
// floor ("≥").
func TestNoCampaignETAOfZero(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	last := time.Duration(-1)
	for _, c := range []struct {
		left    time.Duration
		partial bool
		want    string
	}{
		{90 * time.Second, false, "14:00:00 c done in 1s (campaign ETA 1m30s)"},
		{90 * time.Second, true, "14:00:00 c done in 1s (campaign ETA ≥ 1m30s)"},
		{0, false, "14:00:00 c done in 1s"},
		{0, true, "14:00:00 c done in 1s"},
	} {
		st := &State{ETA: ETA{Known: true, Remaining: c.left, Partial: c.partial}}
		got := EventLine(Event{Kind: PhaseFinished, Time: at, Phase: "c", State: st, Message: "c done in 1s"}, &last)
		if got != c.want {
			t.Errorf("%s left: %q; want %q", c.left, got, c.want)
		}
	}
}
