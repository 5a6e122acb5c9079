package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
)

// searchCampaign is a search over a stand-in server whose p99 TPOT grows
// linearly with concurrency, the SLO's boundary at c=100, with noise of
// up to 3% drawn from the unit (its concurrency and repeat): the same
// unit measures the same, run straight or resumed.
func searchCampaign(t *testing.T, extra string) *campaign.Plan {
	return loadCampaign(t, `
name: limit
phases:
  - id: limit
    search:
      axis: concurrency
      range: [1, 512]
      slo: {p99_tpot_ms: "<= 50", error_rate: "<= 0.01"}
      resolution: 10%
    repeat: 3
    steps:
      - run: |
          awk -v c=${concurrency} -v r=$GREENLIGHT_REPEAT 'BEGIN { srand(c * 1000 + r); printf "{\"p99_tpot_ms\": %.4f, \"error_rate\": 0}\n", 50 * c / 100.5 * (1 + 0.06 * (rand() - 0.5)) }' >> "$GREENLIGHT_RESULTS"
`+extra)
}

// probesOf is a finished search phase's probes, replayed from its units.
func probesOf(t *testing.T, p *campaign.Plan, st *State) (*search.Search, search.Result) {
	t.Helper()
	s, next := results.SearchProbes(p.Phase("limit"), st.Phase("limit").Steps)
	if next >= 0 {
		t.Fatalf("the search asks for unit %d after its phase ended", next)
	}
	return s, s.Result()
}

// TestSearchFindsTheLimit: the search runs only the units it asks for,
// finds the boundary within its resolution in no more probes than
// promised, skips the rest saying why, and each unit runs once.
func TestSearchFindsTheLimit(t *testing.T) {
	p := searchCampaign(t, "")
	h := start(t, p, testOptions(t))
	// Mid-search, the ETA counts the probes still to come, not the grid's
	// hundreds of units.
	mid := h.until(60*time.Second, "the fifth unit's end", func(e Event) bool {
		return e.Kind == StepFinished && e.Phase == "limit" && e.Step >= 4*p.Phase("limit").Sweep.Repeat
	}).State.Phase("limit")
	var each time.Duration
	n := 0
	for _, ss := range mid.Steps {
		if ss.Status == Done {
			each += ss.Ended.Sub(ss.Started)
			n++
		}
	}
	each /= time.Duration(n)
	if e := mid.ETA; e.Source != SourceProbes || !e.Known || e.Remaining > 40*each || e.Remaining < 10*each {
		t.Errorf("mid-search ETA %+v (%d runs done, %s each); want the probes left at most, 3 runs each, less the runs under way", e, n, each)
	}
	st := h.finished(120 * time.Second)
	ph := st.Phase("limit")
	if ph.Status != Done {
		t.Fatalf("limit = %s %q", ph.Status, ph.Reason)
	}
	s, r := probesOf(t, p, st)
	if !r.OK || r.Limit < 90 || r.Limit > 110 || r.Above <= r.Limit || float64(r.Above) > float64(r.Limit)*1.1+1 {
		t.Errorf("found %+v after %+v; want the boundary 100 within 10%%, bracketed to 10%%", r, s.Probes)
	}
	if max := p.Phase("limit").Sweep.Search.MaxProbes(); len(s.Probes) > max {
		t.Errorf("%d probes, more than the %d promised", len(s.Probes), max)
	}
	ran, runs := 0, 0
	for _, pr := range s.Probes {
		runs += pr.Repeats
	}
	for _, ss := range ph.Steps {
		switch ss.Status {
		case Done:
			ran++
		case Skipped:
			if !strings.HasPrefix(ss.Reason, "not probed: the search found concurrency ") {
				t.Fatalf("a unit skipped as %q", ss.Reason)
			}
		default:
			t.Fatalf("a unit left %s", ss.Status)
		}
	}
	if ran != runs {
		t.Errorf("%d units ran, the probes counted %d runs", ran, runs)
	}
	j := string(must(os.ReadFile(filepath.Join(h.r.StateDir(), "journal.jsonl"))))
	if n := strings.Count(j, `"kind":"step-start"`); n != ran {
		t.Errorf("%d step starts journaled for %d units run", n, ran)
	}
	t.Logf("limit %d (bracket %d) in %d probes, %d runs; a grid of the same resolution has %d values", r.Limit, r.Above, len(s.Probes), runs, len(p.Phase("limit").Sweep.Search.Values))
}

// TestSearchResumesWhereItWas: a runner killed -9 mid-search, started
// again, continues the same search: every probe the same as a straight
// run's, no unit run to its end twice.
func TestSearchResumesWhereItWas(t *testing.T) {
	p := searchCampaign(t, "")
	straight := start(t, p, testOptions(t)).finished(120 * time.Second)
	want, _ := probesOf(t, p, straight)

	dir := t.TempDir()
	q := searchCampaign(t, "")
	stateDir := filepath.Join(dir, "state")
	killRunnerWhen(t, q.File, stateDir, "25 units ended (bisecting)", func() bool {
		b, _ := os.ReadFile(filepath.Join(stateDir, "journal.jsonl"))
		return strings.Count(string(b), `"kind":"step-end"`) >= 25
	})
	st := startAgain(t, q, stateDir).finished(120 * time.Second)
	got, _ := probesOf(t, q, st)
	if !slices.Equal(values(got.Probes), values(want.Probes)) {
		t.Errorf("resumed probes %v; straight %v", values(got.Probes), values(want.Probes))
	}
	// No unit ran to its end twice (one the kill caught as its supervisor
	// started is started again: its try is journaled ended, not done).
	j := string(must(os.ReadFile(filepath.Join(stateDir, "journal.jsonl"))))
	seen := map[string]bool{}
	for _, l := range strings.Split(j, "\n") {
		if !strings.Contains(l, `"kind":"step-end"`) || !strings.Contains(l, `"status":"done"`) {
			continue
		}
		_, at, _ := strings.Cut(l, `"step":`)
		at, _, _ = strings.Cut(at, ",")
		if seen[at] {
			t.Errorf("step %s ended twice:\n%s", at, j)
		}
		seen[at] = true
	}
}

func values(ps []search.Probe) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d:%s/%d", p.Value, p.Verdict, p.Repeats))
	}
	return out
}

// TestSearchRedoesAStampedRun: a run the monitor stamps as it ends (a GPU
// throttled) is never used to decide: its probe gets another run, and
// the facts are journaled with the run, its figures and its stamp.
func TestSearchRedoesAStampedRun(t *testing.T) {
	p := searchCampaign(t, "")
	opts := testOptions(t)
	var mu sync.Mutex
	stamped := -1 // the first unit's step, stamped
	seen := 0
	opts.Witness = func(s StepSeen) *StepFacts {
		mu.Lock()
		defer mu.Unlock()
		if s.Phase.ID != "limit" || s.Step.Ended.IsZero() || s.Step.Started.IsZero() {
			t.Errorf("witness asked of %s step %d, its span %v..%v", s.Phase.ID, s.Step.Index, s.Step.Started, s.Step.Ended)
		}
		seen++
		f := &StepFacts{Readings: 4, PowerW: 700, PowerGPUs: 1, SMClockMHz: 1980}
		if stamped < 0 {
			stamped = s.Step.Index
			f.Stamp = []string{"GPU 0 throttled (HW slowdown)"}
		}
		return f
	}
	h := start(t, p, opts)
	st := h.finished(120 * time.Second)
	s, _ := probesOf(t, p, st)
	first := s.Probes[0]
	if first.Value != 1 || first.Repeats != 3 {
		t.Errorf("the first probe %+v; want c=1 decided by 3 unstamped runs", first)
	}
	ran := 0
	for _, ss := range st.Phase("limit").Steps {
		if ss.Point == "concurrency=1" && ss.Status == Done {
			ran++
		}
	}
	if ran != 4 {
		t.Errorf("c=1 ran %d times; want 4 (3 and the stamped one's redo)", ran)
	}
	h.r.Close()
	again, err := Replay(p, h.r.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	ended := 0
	for _, ss := range again.Phase("limit").Steps {
		if !ss.Ended.IsZero() {
			ended++
			if ss.Facts == nil || ss.Facts.PowerW != 700 || ss.Facts.SMClockMHz != 1980 {
				t.Errorf("the journal's facts of step %d: %+v", ss.Index+1, ss.Facts)
			}
		}
	}
	if ended != seen {
		t.Errorf("the witness was asked %d times; %d runs ended", seen, ended)
	}
	if got := again.Phase("limit").Steps[stamped].Facts.Stamped(); got != "GPU 0 throttled (HW slowdown)" {
		t.Errorf("the journal's stamp of step %d: %q", stamped+1, got)
	}
}

// TestWitnessPanics: a witness that panics is said as a warning; the
// campaign runs to its end, its runs unstamped.
func TestWitnessPanics(t *testing.T) {
	p := searchCampaign(t, "")
	opts := testOptions(t)
	opts.Witness = func(StepSeen) *StepFacts { panic("the sampler's ring is torn") }
	st := start(t, p, opts).finished(120 * time.Second)
	if st.Phase("limit").Status != Done {
		t.Fatalf("limit %s: %s", st.Phase("limit").Status, st.Phase("limit").Reason)
	}
	said := strings.Join(st.Warnings, "\n")
	if !strings.Contains(said, "the monitor could not tell what it saw of the step's GPUs (it failed: the sampler's ring is torn)") {
		t.Errorf("warnings: %s", said)
	}
}

// TestSearchContinuesAfterAStop: greenlight stop, then run: the same
// search goes on from the runs done (the same probes as a straight run's),
// said as the search's runs, not as a grid's hundreds of units.
func TestSearchContinuesAfterAStop(t *testing.T) {
	p := searchCampaign(t, "")
	straight := start(t, p, testOptions(t)).finished(120 * time.Second)
	want, _ := probesOf(t, p, straight)

	q := searchCampaign(t, "")
	opts := testOptions(t)
	opts.StateDir = filepath.Join(t.TempDir(), "state")
	h := start(t, q, opts)
	h.until(60*time.Second, "a unit of value 8 or past ended", func(e Event) bool {
		return e.Kind == StepFinished && e.Phase == "limit" && e.Step >= 40
	})
	h.r.Stop()
	h.finished(30 * time.Second)
	h.r.Close()
	h2 := start(t, q, opts)
	st := h2.finished(120 * time.Second)
	got, _ := probesOf(t, q, st)
	if !slices.Equal(values(got.Probes), values(want.Probes)) {
		t.Errorf("continued probes %v; straight %v", values(got.Probes), values(want.Probes))
	}
	if !slices.ContainsFunc(h2.seen, func(e Event) bool {
		return e.Kind == Progress && strings.Contains(e.Message, "runs done are kept, and the search goes on from them")
	}) {
		t.Errorf("the search's runs kept are not said as an event")
	}
}
