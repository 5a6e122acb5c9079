package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// servedGrid is a service swept over a 2x2 grid, and two phases that use
// it: each writes which service point was up when it ran. The service
// says "overlap" if it starts while another point's service is still up.
// gpus is the service's gpus: line ("" for every GPU).
func servedGrid(dir, gpus string) string {
	return fmt.Sprintf(`
name: served
env: {D: %s}
phases:
  - id: serve
    %s
    sweep:
      seqs: [64, 256]
      tokens: [2048, 8192]
    service:
      run: |
        if [ -e "$D/up" ]; then echo overlap >> "$D/starts"; fi
        trap 'rm -f "$D/up"; exit 0' TERM INT
        echo "${seqs} ${tokens}" >> "$D/starts"
        echo "${seqs} ${tokens}" > "$D/up"
        echo ready
        while :; do sleep 0.05; done
      ready: {log: ready}
  - id: decode
    needs: [serve]
    sweep: {c: [1, 2]}
    steps:
      - run: |
          echo "$GREENLIGHT_PHASE ${c} under $(cat "$D/up")" >> "$D/ran"
          echo "{\"tok_s\": $(( ${c} * 10 ))}" >> "$GREENLIGHT_RESULTS"
          sleep 0.1
  - id: prefill
    needs: [serve]
    steps:
      - run: |
          echo "$GREENLIGHT_PHASE under $(cat "$D/up")" >> "$D/ran"
`, dir, gpus)
}

// checkServedGrid: the service started once per point, in grid order,
// never two at once, and every phase ran once under its own point.
func checkServedGrid(t *testing.T, dir string, st *State) {
	t.Helper()
	starts := fileLines(t, filepath.Join(dir, "starts"))
	if want := []string{"64 2048", "64 8192", "256 2048", "256 8192"}; !slices.Equal(starts, want) {
		t.Errorf("the service started %v; want once per point, in order: %v", starts, want)
	}
	ran := fileLines(t, filepath.Join(dir, "ran"))
	seen := map[string]int{}
	for _, l := range ran {
		seen[l]++
	}
	for _, pt := range []string{"64 2048", "64 8192", "256 2048", "256 8192"} {
		id := strings.ReplaceAll(pt, " ", ".")
		for _, want := range []string{"decode." + id + " 1 under " + pt, "decode." + id + " 2 under " + pt, "prefill." + id + " under " + pt} {
			if seen[want] != 1 {
				t.Errorf("%q ran %d times; want once (%v)", want, seen[want], ran)
			}
		}
	}
	if len(ran) != 12 {
		t.Errorf("%d runs, want 12: %v", len(ran), ran)
	}
	for _, ps := range st.Phases {
		if ps.Status != Done {
			t.Errorf("%s = %s %s", ps.ID, ps.Status, ps.Reason)
		}
	}
	d := st.Phase("decode.256.2048")
	if d == nil || len(d.Steps) != 2 || len(d.Steps[1].Results) != 1 {
		t.Fatalf("decode.256.2048: %+v", d)
	}
	row := d.Steps[1].Results[0]
	if !slices.Equal(row.Cols, []string{"seqs", "tokens", "c", "repeat", "tok_s"}) || row.Values[0] != 256.0 || row.Values[1] != 2048.0 || row.Values[2] != 2.0 || row.Values[4] != 20.0 {
		t.Errorf("a row of decode.256.2048 at c=2: %v %v", row.Cols, row.Values)
	}
}

// TestServiceSweepRestartsTheServiceOncePerPoint: a swept service starts
// once per service point and no more, in grid order, the previous point's
// stopped before the next starts; every phase that uses it runs under
// each point, its rows carrying the service's values.
//
// Holding every GPU, the points would queue for them anyway; a service
// that holds none of this machine's (a Slurm job, a server on the CPU)
// is kept in turn by its points' order alone.
func TestServiceSweepRestartsTheServiceOncePerPoint(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	for _, tt := range []struct{ name, gpus string }{{"every GPU", ""}, {"no GPU", "gpus: none"}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := loadCampaign(t, servedGrid(dir, tt.gpus))
			checkServedGrid(t, dir, start(t, p, testOptions(t)).finished(60*time.Second))
		})
	}
}

// TestServiceSweepResumes: the runner killed (kill -9) while the second
// point's service is up; a new one re-adopts that service, runs what is
// left, and no point's service starts twice.
func TestServiceSweepResumes(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	p := loadCampaign(t, servedGrid(dir, ""))
	state := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, state, `"kind":"step-start","phase":"decode.64.8192","step":1,`)
	checkServedGrid(t, dir, startAgain(t, p, state).finished(60*time.Second))
}

// TestSkipAServicePoint: skipping one point's service (one server setting)
// skips the phases that run under it, with that reason, not failed; the
// grid goes on to the next point, and the campaign ends well.
func TestSkipAServicePoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, servedGrid(dir, ""))
	h := start(t, p, testOptions(t))
	h.until(20*time.Second, "the first point's service", func(e Event) bool { return e.Kind == ServiceReady })
	if err := h.r.Skip("serve.64.8192"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(60 * time.Second)
	for _, id := range []string{"decode.64.8192", "prefill.64.8192"} {
		if ps := st.Phase(id); ps.Status != Skipped || !strings.Contains(ps.Reason, "its service point serve.64.8192 (seqs=64,tokens=8192) was skipped") {
			t.Errorf("%s = %s %q; want skipped with its point", id, ps.Status, ps.Reason)
		}
	}
	if starts := fileLines(t, filepath.Join(dir, "starts")); !slices.Equal(starts, []string{"64 2048", "256 2048", "256 8192"}) {
		t.Errorf("the service started %v", starts)
	}
	if ps := st.Phase("decode.256.8192"); ps.Status != Done {
		t.Errorf("the last point's decode = %s", ps.Status)
	}
	if code := st.ExitCode(false, false); code != 0 {
		t.Errorf("exit code %d after a point skipped by hand; want 0", code)
	}
}

// seqsGrid is a campaign of a service swept over seqs (its values as
// written), each start written to dir/starts, and a decode under it that
// writes its phase to dir/ran; the server fails to load at failAt, when
// given.
func seqsGrid(name, dir, seqs, failAt string) string {
	fail := ""
	if failAt != "" {
		fail = fmt.Sprintf("if [ ${seqs} = %s ]; then echo \"CUDA out of memory\"; exit 1; fi\n        ", failAt)
	}
	return fmt.Sprintf(`name: %s
phases:
  - id: serve
    sweep: {seqs: [%s]}
    service:
      run: |
        echo ${seqs} >> %s/starts
        %secho ready
        while :; do sleep 0.05; done
      ready: {log: ready}
  - id: decode
    needs: [serve]
    steps:
      - run: |
          echo "$GREENLIGHT_PHASE" >> %s/ran
`, name, seqs, dir, fail, dir)
}

// TestAFailedServicePointGoesOn: a setting the server cannot load with
// (an OOM at a large batch) fails its point, blocks the phases under it,
// and the grid goes on to the next point.
func TestAFailedServicePointGoesOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, seqsGrid("oom", dir, "64, 1024, 256", "1024"))
	st := start(t, p, testOptions(t)).finished(60 * time.Second)
	if got := fileLines(t, filepath.Join(dir, "starts")); !slices.Equal(got, []string{"64", "1024", "256"}) {
		t.Errorf("the service started %v", got)
	}
	if got := fileLines(t, filepath.Join(dir, "ran")); !slices.Equal(got, []string{"decode.64", "decode.256"}) {
		t.Errorf("decode ran %v", got)
	}
	if s, d := st.Phase("serve.1024").Status, st.Phase("decode.1024").Status; s != Failed || d != Blocked {
		t.Errorf("the failed point: serve %s, decode %s", s, d)
	}
	if code := st.ExitCode(false, false); code == 0 {
		t.Error("a failed point ends the campaign well")
	}
}

// TestEditedServiceGridRunsOnlyNewPoints: a server setting added to a
// finished service sweep loads the server only for it; the settings done
// are kept, their server not loaded again.
func TestEditedServiceGridRunsOnlyNewPoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	grid := func(seqs string) string { return seqsGrid("edited", dir, seqs, "") }
	state := filepath.Join(dir, "state")
	h := startAgain(t, writeCampaign(t, path, grid("64, 256")), state)
	h.finished(60 * time.Second)
	h.r.Close()
	h = startAgain(t, writeCampaign(t, path, grid("32, 64, 256, 1024")), state)
	st := h.finished(60 * time.Second)
	h.r.Close()
	if got := fileLines(t, filepath.Join(dir, "starts")); !slices.Equal(got, []string{"64", "256", "32", "1024"}) {
		t.Errorf("the service started %v; want each setting once", got)
	}
	if got := fileLines(t, filepath.Join(dir, "ran")); !slices.Equal(got, []string{"decode.64", "decode.256", "decode.32", "decode.1024"}) {
		t.Errorf("decode ran %v", got)
	}
	for _, ps := range st.Phases {
		if ps.Status != Done {
			t.Errorf("%s = %s", ps.ID, ps.Status)
		}
	}
}

// BenchmarkSnapshotOfAServiceGrid: the runner's picture of a campaign of
// a service swept over 256 points, three phases under each (769 phases):
// every wait reason and the campaign ETA's simulation of what is left.
// Cost per snapshot, taken on every change the window and the file see.
func BenchmarkSnapshotOfAServiceGrid(b *testing.B) {
	var vals []string
	for i := range 16 {
		vals = append(vals, fmt.Sprint(i))
	}
	v := strings.Join(vals, ", ")
	body := fmt.Sprintf(`name: big
phases:
  - id: serve
    sweep: {a: [%[1]s], b: [%[1]s]}
    estimate: 36m
    service:
      run: |
        serve ${a} ${b}
      ready: {log: up}
  - id: decode
    needs: [serve]
    sweep: {c: [1, 2, 4, 8]}
    repeat: 3
    steps:
      - run: |
          bench ${c}
        estimate: 1m
  - id: prefill
    needs: [serve]
    steps:
      - run: |
          bench
        estimate: 2m
  - id: sum
    needs: [decode, prefill]
    steps:
      - run: |
          true
`, v)
	path := filepath.Join(b.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := campaign.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	opts := testOptions(b)
	r, err := New(p, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(p.Phases)), "phases")
	b.ResetTimer()
	for range b.N {
		st := r.snapshot()
		if !st.ETA.Known || st.ETA.Remaining < 256*36*time.Minute {
			b.Fatalf("ETA %+v", st.ETA)
		}
	}
}

// TestARetriedPointWaitsForTheOneUp: a phase of an earlier point retried
// while a later point's server is up starts its own point's server again
// only once the one up has stopped, even where the servers hold no GPU
// of this machine to queue for.
func TestARetriedPointWaitsForTheOneUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, fmt.Sprintf(`
name: retried
env: {D: %s}
phases:
  - id: serve
    gpus: none
    sweep: {seqs: [1, 2, 3]}
    service:
      run: |
        if [ -e "$D/up" ]; then echo overlap >> "$D/starts"; fi
        trap 'rm -f "$D/up"; exit 0' TERM INT
        echo ${seqs} >> "$D/starts"
        echo ${seqs} > "$D/up"
        echo ready
        while :; do sleep 0.05; done
      ready: {log: ready}
  - id: decode
    needs: [serve]
    steps:
      - run: |
          echo "$GREENLIGHT_PHASE under $(cat "$D/up")" >> "$D/ran"
          sleep 1
`, dir))
	h := start(t, p, testOptions(t))
	h.until(20*time.Second, "the second point's decode", func(e Event) bool { return e.Kind == StepStarted && e.Phase == "decode.2" })
	if err := h.r.Retry("decode.1"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(60 * time.Second)
	starts := fileLines(t, filepath.Join(dir, "starts"))
	if slices.Contains(starts, "overlap") || len(starts) != 4 || starts[0] != "1" || starts[1] != "2" {
		t.Errorf("the service started %v; want 1, 2, then 1 again and 3 in turn, never two at once", starts)
	}
	ran := fileLines(t, filepath.Join(dir, "ran"))
	if n := slices.Index(ran, "decode.1 under 1"); n < 0 || !slices.Contains(ran[n+1:], "decode.1 under 1") {
		t.Errorf("decode ran %v; want decode.1 twice, under its own point", ran)
	}
	for _, ps := range st.Phases {
		if ps.Status != Done {
			t.Errorf("%s = %s %s", ps.ID, ps.Status, ps.Reason)
		}
	}
}
