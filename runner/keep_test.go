package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// keptCampaign is the README's pattern for one client on a server at a
// time: decode, then the search after it, then the profile after that,
// each needing the server, none needing another's success (after:). A
// decode point fails once (a connection reset at concurrency 64, the
// first time only); keep is the service's keep: line ("" for none).
func keptCampaign(dir, keep string) string {
	return fmt.Sprintf(`name: kept
notify: |
  echo "$GREENLIGHT_EVENT $GREENLIGHT_PHASE $GREENLIGHT_TEXT" >> %[1]s/told
phases:
  - id: serve
    service:
      run: |
        echo start >> %[1]s/starts
        echo ready
        while :; do sleep 0.05; done
      ready: {log: ready}
%[2]s
  - id: decode
    needs: [serve]
    sweep: {concurrency: [1, 64]}
    steps:
      - run: |
          if [ ${concurrency} = 64 ] && [ ! -e %[1]s/reset-once ]; then touch %[1]s/reset-once; echo "connection reset by peer"; exit 1; fi
          echo "decode ${concurrency}" >> %[1]s/ran
  - id: limit
    needs: [serve]
    after: [decode]
    steps:
      - run: |
          echo limit >> %[1]s/ran
  - id: profile
    needs: [serve]
    after: [limit]
    steps:
      - run: |
          echo profile >> %[1]s/ran
`, dir, keep)
}

// TestAFailedPointKeepsItsServer: a decode point that failed once costs
// no model load. The search and the profile, ordered after decode but not
// needing its success, run; the server stays up for decode, said on its
// row; a retry runs decode on that same server; one notice tells of the
// one failure, and says the server stays up.
func TestAFailedPointKeepsItsServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, keptCampaign(dir, ""))
	h, told := startNotified(t, p)
	r := h.r
	e := h.until(30*time.Second, "the server kept for decode", func(e Event) bool {
		return e.Kind == Warning && e.Phase == "serve" && strings.Contains(e.Message, "kept for decode")
	})
	if s := e.State.Phase("serve"); s.Status != Ready || !strings.Contains(s.Kept, "r on decode") {
		t.Errorf("serve = %s, kept %q; want ready, its row saying the keys", s.Status, s.Kept)
	}
	for _, id := range []string{"limit", "profile"} {
		if s := e.State.Phase(id); s.Status != Done {
			t.Errorf("%s = %s %q; want done: after: orders it, decode's failure does not block it", id, s.Status, s.Reason)
		}
	}
	if e.State.Finished {
		t.Error("the campaign finished with its server kept for a retry")
	}
	// The journal read alone (status with no runner, report after a
	// kill -9) says the same: serving, kept for decode.
	if st, err := Replay(p, string(r.dirs)); err != nil {
		t.Fatal(err)
	} else if s := st.Phase("serve"); s.Status != Ready || !strings.Contains(s.Kept, "kept for decode (failed)") {
		t.Errorf("from the journal serve = %s, kept %q; want ready, kept for decode", s.Status, s.Kept)
	}
	if err := r.Retry("decode"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(30 * time.Second)
	r.Close()
	<-told
	if got := fileLines(t, filepath.Join(dir, "starts")); len(got) != 1 {
		t.Errorf("the server started %d times; want once: the retry ran on the server kept", len(got))
	}
	for _, id := range []string{"serve", "decode", "limit", "profile"} {
		if s := st.Phase(id); s.Status != Done {
			t.Errorf("%s = %s %q", id, s.Status, s.Reason)
		}
	}
	if got := fileLines(t, filepath.Join(dir, "ran")); !slices.Equal(got, []string{"decode 1", "limit", "profile", "decode 1", "decode 64"}) {
		t.Errorf("ran %v", got)
	}
	var failed []string
	for _, l := range fileLines(t, filepath.Join(dir, "told")) {
		if strings.HasPrefix(l, "failed ") {
			failed = append(failed, l)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "serve stays up for its retry") {
		t.Errorf("failure notices %q; want one, saying the server stays up", failed)
	}
}

// TestAKeptServerGoes: let go (skip on the failed phase), the server
// stops and the phase stays failed, let go in the journal's record too;
// with keep: it goes by itself at its limit.
func TestAKeptServerGoes(t *testing.T) {
	t.Parallel()
	t.Run("let go", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		p := loadCampaign(t, keptCampaign(dir, ""))
		opts := testOptions(t)
		opts.StateDir = filepath.Join(dir, "state")
		h := start(t, p, opts)
		h.until(30*time.Second, "the server kept", func(e Event) bool { return e.Kind == Warning && strings.Contains(e.Message, "kept for decode") })
		if err := h.r.Skip("decode"); err != nil {
			t.Fatal(err)
		}
		st := h.finished(30 * time.Second)
		h.r.Close()
		if s := st.Phase("decode"); s.Status != Failed || !s.LetGo {
			t.Errorf("decode = %s, let go %v; want failed, let go", s.Status, s.LetGo)
		}
		if s := st.Phase("serve"); s.Status != Done || s.Kept != "" {
			t.Errorf("serve = %s, kept %q; want stopped as done", s.Status, s.Kept)
		}
		replayed, err := Replay(p, opts.StateDir)
		if err != nil {
			t.Fatal(err)
		}
		if s := replayed.Phase("decode"); s.Status != Failed || !s.LetGo {
			t.Errorf("from the journal decode = %s, let go %v", s.Status, s.LetGo)
		}
	})
	t.Run("keep limit", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		p := loadCampaign(t, keptCampaign(dir, "      keep: 1s"))
		h := start(t, p, testOptions(t))
		h.until(30*time.Second, "the server kept", func(e Event) bool {
			return e.Kind == Warning && strings.Contains(e.Message, "kept for decode") && strings.Contains(e.Message, "(keep:)")
		})
		h.until(30*time.Second, "the keep ran out", func(e Event) bool {
			return e.Kind == Warning && strings.Contains(e.Message, "no retry came (keep: 1s)")
		})
		st := h.finished(30 * time.Second)
		h.r.Close()
		if s := st.Phase("decode"); s.Status != Failed {
			t.Errorf("decode = %s", s.Status)
		}
		if st.Headline() != HeadFailed {
			t.Errorf("headline %s", st.Headline())
		}
	})
	t.Run("keep 0 keeps nothing", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		p := loadCampaign(t, keptCampaign(dir, "      keep: 0s"))
		st := start(t, p, testOptions(t)).finished(30 * time.Second)
		if s := st.Phase("decode"); s.Status != Failed {
			t.Errorf("decode = %s", s.Status)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "told"))
		if strings.Contains(string(b), "stays up") {
			t.Errorf("keep: 0s, and the notice says the server stays up: %s", b)
		}
	})
}

// TestAGridGoesOnPastAFailedPoint: on_failure: continue records a failed
// point and runs the others; the phase fails naming it; retry --point
// runs that point alone, keeping every other run, in the journal too.
func TestAGridGoesOnPastAFailedPoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, fmt.Sprintf(`name: goon
phases:
  - id: decode
    sweep: {concurrency: [1, 8, 64]}
    repeat: 2
    on_failure: continue
    steps:
      - run: |
          if [ ${concurrency} = 8 ] && [ ! -e %[1]s/fixed ]; then echo "connection reset by peer"; exit 1; fi
          echo "{\"tpot_ms\": ${concurrency}}" >> "$GREENLIGHT_RESULTS"
          echo ${concurrency} >> %[1]s/ran
`, dir))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	e := h.until(30*time.Second, "decode failed", func(e Event) bool { return e.Kind == PhaseFinished && e.Phase == "decode" })
	d := e.State.Phase("decode")
	if d.Status != Failed || !strings.Contains(d.Reason, "1 of 3 points failed (concurrency=8)") || !strings.Contains(d.Reason, "retry decode --point concurrency=8") {
		t.Fatalf("decode = %s %q", d.Status, d.Reason)
	}
	if got := fileLines(t, filepath.Join(dir, "ran")); !slices.Equal(got, []string{"1", "64", "1", "64"}) {
		t.Errorf("ran %v; want every other point's runs", got)
	}
	units := results.PointUnits(p.Phase("decode"), d.Steps)
	for pt, runs := range units {
		for _, u := range runs {
			want := results.UnitDone
			if pt == 1 {
				want = results.UnitFailed
			}
			if u.Outcome != want {
				t.Errorf("point %d repeat %d: %s; want %s", pt, u.Repeat, u.Outcome, want)
			}
		}
	}
	h.finished(30 * time.Second)
	os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644)
	if err := h.r.RetryPoint("decode", "concurrency=8"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(30 * time.Second)
	h.r.Close()
	if got := fileLines(t, filepath.Join(dir, "ran")); !slices.Equal(got, []string{"1", "64", "1", "64", "8", "8"}) {
		t.Errorf("ran %v; want the failed point alone run again", got)
	}
	for _, s := range []*State{st, replayed(t, p, opts.StateDir)} {
		d := s.Phase("decode")
		rows := 0
		for _, ss := range d.Steps {
			rows += len(ss.Results)
		}
		if d.Status != Done || rows != 6 || d.Attempt != 2 {
			t.Errorf("decode = %s, %d rows, attempt %d; want done with 6 rows in attempt 2", d.Status, rows, d.Attempt)
		}
	}
}

func replayed(t *testing.T, p *campaign.Plan, dir string) *State {
	t.Helper()
	st, err := Replay(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAStoppedUnitLeavesItsPointOpen: a point one of whose runs a stop
// cut is not complete (its noise is not judged: the run comes when the
// campaign resumes), by the rule the results model's Complete uses.
func TestAStoppedUnitLeavesItsPointOpen(t *testing.T) {
	p := loadCampaign(t, `name: open
phases:
  - id: g
    sweep: {m: [1]}
    repeat: 2
    steps:
      - run: |
          true
`)
	ph := p.Phase("g")
	steps := []StepState{{Status: Done}, {Status: Stopped, Reason: "campaign stopped"}}
	if results.PointComplete(ph, steps, 0) {
		t.Error("a point with a run cut by a stop is complete")
	}
	steps[1] = StepState{Status: Done}
	if !results.PointComplete(ph, steps, 0) {
		t.Error("a point with both runs done is not complete")
	}
}

// TestGatedIsTheVerbsRule: Gated says what approve takes: a stopped
// phase not past its gate is gated; a gate given already is not, nor a
// phase past it.
func TestGatedIsTheVerbsRule(t *testing.T) {
	for _, c := range []struct {
		p    PhaseState
		want bool
	}{
		{PhaseState{ID: "a", Manual: true, Status: Waiting}, true},
		{PhaseState{ID: "a", Manual: true, Status: Stopped}, true},
		{PhaseState{ID: "a", Manual: true, Status: Pending, GateOpen: true}, false},
		{PhaseState{ID: "a", Manual: true, Status: Done}, false},
		{PhaseState{ID: "a", Status: Waiting}, false},
	} {
		if got := c.p.Gated(); got != c.want {
			t.Errorf("%s, gate given %v, manual %v: gated %v; want %v", c.p.Status, c.p.GateOpen, c.p.Manual, got, c.want)
		}
	}
}
