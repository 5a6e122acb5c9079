package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/slurm/slurmtest"
)

// TestSlurm runs phases as jobs of a real single-node Slurm cluster (see
// slurmtest), one cluster for all the cases, which run side by side.
func TestSlurm(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	c := slurmtest.Start(t)
	old, had := os.LookupEnv("SLURM_CONF")
	os.Setenv("SLURM_CONF", c.Conf)
	t.Cleanup(func() {
		if had {
			os.Setenv("SLURM_CONF", old)
		} else {
			os.Unsetenv("SLURM_CONF")
		}
	})
	// scontrol, through a shim that refuses to suspend the jobs listed in
	// refuse-suspend, as Slurm refuses a user who is not an operator.
	shim := t.TempDir()
	real, err := exec.LookPath("scontrol")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(shim, "scontrol"), []byte(fmt.Sprintf(`#!/bin/sh
if [ "$1" = suspend ] && grep -qx "$2" %[1]s/refuse-suspend 2>/dev/null; then
  echo "scontrol_suspend error: Access/permission denied" >&2
  exit 1
fi
if [ "$2" = show ] && [ "$3" = job ] && grep -qx "$4" %[1]s/unreachable 2>/dev/null; then
  echo refused >> %[1]s/refused-"$4"
  echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2
  exit 1
fi
exec %[2]s "$@"
`, shim, real)), 0o755)
	// scancel, through a shim that swallows the graceful signal for the
	// jobs listed in deaf-to-term, as a batch script stuck in D state would.
	realCancel, err := exec.LookPath("scancel")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(shim, "scancel"), []byte(fmt.Sprintf(`#!/bin/sh
for last; do :; done
if [ "$1" = --batch ] && grep -qx "$last" %[1]s/deaf-to-term 2>/dev/null; then
  exit 0
fi
exec %[2]s "$@"
`, shim, realCancel)), 0o755)
	oldPath := os.Getenv("PATH")
	os.Setenv("PATH", shim+":"+oldPath)
	t.Cleanup(func() { os.Setenv("PATH", oldPath) })
	t.Run("cases", func(t *testing.T) {
		t.Run("TwoPhasesSecondOnSlurm", func(t *testing.T) { t.Parallel(); slurmTwoPhases(t, c) })
		t.Run("PendingShowsReasonAndSkipCancels", func(t *testing.T) { t.Parallel(); slurmPendingThenSkip(t, c) })
		t.Run("RunnerKilledReadoptsTheJob", func(t *testing.T) { t.Parallel(); slurmReadopt(t, c, false) })
		t.Run("JobIDNotJournaledFoundByName", func(t *testing.T) { t.Parallel(); slurmReadopt(t, c, true) })
		t.Run("TimeLimitIsTIMEOUT", func(t *testing.T) { t.Parallel(); slurmTimeout(t, c) })
		t.Run("ServiceProbedOnItsNode", func(t *testing.T) { t.Parallel(); slurmService(t, c) })
		t.Run("PreflightNamesAMissingPartition", func(t *testing.T) { t.Parallel(); slurmPreflightPartition(t, c) })
		t.Run("FreezeSuspendsTheJob", func(t *testing.T) { t.Parallel(); slurmFreeze(t, c, shim, false) })
		t.Run("FreezeRefusedIsSaid", func(t *testing.T) { t.Parallel(); slurmFreeze(t, c, shim, true) })
		t.Run("ControllerSilentJobFollowedByItsFiles", func(t *testing.T) { t.Parallel(); slurmUnreachable(t, c, shim) })
		t.Run("SbatchRefusalFailsThePhase", func(t *testing.T) { t.Parallel(); slurmRefused(t, c) })
		t.Run("ServiceJobReadoptedNoReload", func(t *testing.T) { t.Parallel(); slurmServiceReadopt(t, c) })
		t.Run("SkipCancelsAJobDeafToTERM", func(t *testing.T) { t.Parallel(); slurmDeafSkip(t, c, shim) })
	})
}

func slurmTwoPhases(t *testing.T, c *slurmtest.Cluster) {
	p := loadCampaign(t, fmt.Sprintf(`
name: two
slurm:
  partition: %s
  time: 5m
phases:
  - id: prep
    slurm: off
    steps:
      - run: echo prepared here
  - id: bench
    needs: [prep]
    steps:
      - run: |
          echo "on $SLURMD_NODENAME job $SLURM_JOB_ID node=$GREENLIGHT_NODE"
          echo '{"tok_s": 1234.5, "node": "'$SLURMD_NODENAME'"}' >> "$GREENLIGHT_RESULTS"
    expect: {tok_s: ">= 1000"}
`, c.Partition))
	h := start(t, p, testOptions(t))
	st := h.finished(60 * time.Second)
	prep, bench := st.Phase("prep"), st.Phase("bench")
	if prep.Status != Done || prep.Slurm != nil {
		t.Errorf("prep = %s %q, slurm %+v; want done, run here", prep.Status, prep.Reason, prep.Slurm)
	}
	if bench.Status != Done {
		t.Fatalf("bench = %s %q", bench.Status, bench.Reason)
	}
	sj := bench.Slurm
	if sj == nil || sj.ID == "" || sj.State != "COMPLETED" || sj.Nodes != c.Node || sj.Started.IsZero() || sj.Partition != c.Partition {
		t.Fatalf("bench's job = %+v; want COMPLETED on %s", sj, c.Node)
	}
	rows := bench.Steps[0].Results
	if len(rows) != 1 || rows[0].Values[0] != 1234.5 || rows[0].Values[1] != c.Node || bench.ExpectFailed != 0 {
		t.Errorf("results from the job = %+v (expect failed %d)", rows, bench.ExpectFailed)
	}
	if bench.Steps[0].Job != sj.ID {
		t.Errorf("step's job %q, phase's %q", bench.Steps[0].Job, sj.ID)
	}
	// The job ran on this machine: its step's group is the campaign's to
	// the GPU sampler (its processes are in Slurm's session, not ours).
	if pg := bench.Steps[0].PGID; pg <= 0 || !slices.Contains(st.Sessions, pg) {
		t.Errorf("the job's step group %d is not among the campaign's sessions %v", pg, st.Sessions)
	}
	log := string(must(os.ReadFile(bench.Steps[0].Log)))
	if !strings.Contains(log, "on "+c.Node+" job "+sj.ID) {
		t.Errorf("the job's output did not reach the step's log:\n%s", log)
	}
	// Once the campaign has ended, the journal alone (status with no
	// runner) still says how the job ended.
	h.r.Close()
	again, err := Replay(p, h.r.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	if rj := again.Phase("bench").Slurm; rj == nil || rj.ID != sj.ID || rj.State != "COMPLETED" || rj.Nodes != c.Node {
		t.Errorf("bench's job from the journal = %+v; want %s COMPLETED on %s", rj, sj.ID, c.Node)
	}
	j := string(must(os.ReadFile(filepath.Join(h.r.StateDir(), "journal.jsonl"))))
	if !strings.Contains(j, `"kind":"step-job","phase":"bench"`) || !strings.Contains(j, `"job":"`+sj.ID+`"`) {
		t.Errorf("the job id is not journaled:\n%s", j)
	}
}

// TestSlurmJobOnThisMachine: only a job on this host lends its pids to
// the GPU sampler's idea of what is the campaign's.
func TestSlurmJobOnThisMachine(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	short, _, _ := strings.Cut(host, ".")
	for nodes, want := range map[string]bool{short: true, short + ".cluster.local": true, "elsewhere01": false, "gpu[01-02]," + short: true, "": false} {
		if got := (&SlurmJob{Nodes: nodes}).OnThisMachine(); got != want {
			t.Errorf("nodes %q: on this machine %v, want %v", nodes, got, want)
		}
	}
	var none *SlurmJob
	if none.OnThisMachine() {
		t.Error("no job is on this machine")
	}
}

func waitState(t *testing.T, h *harness, what string, ok func(*State) bool) *State {
	t.Helper()
	var got *State
	h.until(60*time.Second, what, func(e Event) bool {
		got = h.r.Snapshot()
		return ok(got)
	})
	return got
}

func slurmPendingThenSkip(t *testing.T, c *slurmtest.Cluster) {
	// Another user's job holds both GPUs; ours asks for one.
	blocker := strings.TrimSpace(c.Run(t, "sbatch", "--parsable", "--gpus-per-node=2", "--time=2", "--job-name=blocker", "--output=/dev/null", "--wrap", "sleep 100"))
	t.Cleanup(func() { c.Run(t, "scancel", blocker) })
	p := loadCampaign(t, fmt.Sprintf(`
name: pends
phases:
  - id: gemm
    estimate: 2m
    slurm: {partition: %s, gpus_per_node: 1, time: 3m}
    steps:
      - run: sleep 60
  - id: after
    steps:
      - run: "true"
`, c.Partition))
	h := start(t, p, testOptions(t))
	st := waitState(t, h, "gemm pending for Resources", func(s *State) bool {
		sj := s.Phase("gemm").Slurm
		return sj != nil && sj.ID != "" && sj.State == "PENDING" && sj.Reason == "Resources"
	})
	ph := st.Phase("gemm")
	if !ph.ETA.Queued || !strings.Contains(ph.Steps[0].Stage, "queued in Slurm: Resources") {
		t.Errorf("pending job: ETA %+v, stage %q", ph.ETA, ph.Steps[0].Stage)
	}
	// Slurm's expected start comes from its backfill pass (every second here).
	st = waitState(t, h, "an expected start", func(s *State) bool { return !s.Phase("gemm").Slurm.StartsAt.IsZero() })
	if txt := st.Phase("gemm").ETA.Text(); !strings.HasPrefix(txt, "starts ~") || !strings.Contains(txt, "(Slurm)") {
		t.Errorf("ETA text %q; want it to start with Slurm's expected start", txt)
	}
	id := st.Phase("gemm").Slurm.ID
	if err := h.r.Skip("gemm"); err != nil {
		t.Fatal(err)
	}
	st = h.finished(60 * time.Second)
	if s := st.Phase("gemm"); s.Status != Skipped {
		t.Errorf("gemm = %s %q; want skipped", s.Status, s.Reason)
	}
	if s := st.Phase("after"); s.Status != Done {
		t.Errorf("after = %s %q", s.Status, s.Reason)
	}
	testutil.Eventually(t, 20*time.Second, "squeue no longer listing the skipped job", func() bool {
		return strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", id, "-o", "%i %T")) == ""
	})
}

// slurmReadopt kills the runner mid-job; with lostID, the job id's
// journal line goes too, as when the runner dies between sbatch's answer
// and its journal: the job is found by its name, never submitted twice.
func slurmReadopt(t *testing.T, c *slurmtest.Cluster, lostID bool) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	p := loadCampaign(t, fmt.Sprintf(`
name: readopt
slurm: {partition: %s}
phases:
  - id: long
    steps:
      - run: |
          echo "$SLURM_JOB_ID" >> %s
          sleep 4
          echo '{"v": 7}' >> "$GREENLIGHT_RESULTS"
`, c.Partition, count))
	stateDir := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, stateDir, `"kind":"step-job","phase":"long"`)
	if lostID {
		jp := filepath.Join(stateDir, "journal.jsonl")
		var kept []string
		// Split at newlines: lines() splits at any space, and a journal
		// line may hold spaces (a reason, a command).
		for _, l := range strings.Split(string(must(os.ReadFile(jp))), "\n") {
			// A line torn by the kill is left out too: this rewrite would
			// put it before the line ended, where a journal is never torn.
			if l != "" && !strings.Contains(l, `"kind":"step-job"`) && json.Valid([]byte(l)) {
				kept = append(kept, l)
			}
		}
		os.WriteFile(jp, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	}
	st := startAgain(t, p, stateDir).finished(60 * time.Second)
	s := st.Phase("long")
	if s.Status != Done || !s.Readopted {
		t.Fatalf("long = %s %q readopted=%v", s.Status, s.Reason, s.Readopted)
	}
	ran := lines(t, count)
	if len(ran) != 1 || ran[0] != s.Slurm.ID {
		t.Errorf("jobs that ran %v; want one, the journaled %s", ran, s.Slurm.ID)
	}
	if j := string(must(os.ReadFile(filepath.Join(stateDir, "journal.jsonl")))); strings.Count(j, `"kind":"step-job"`) != 1 {
		t.Errorf("submitted more than once:\n%s", j)
	}
	if lostID && !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "by its name") }) {
		t.Errorf("no word of the job found by its name: %q", st.Warnings)
	}
	if rows := s.Steps[0].Results; len(rows) != 1 || rows[0].Values[0] != 7.0 {
		t.Errorf("results after re-adoption = %+v", rows)
	}
}

func slurmTimeout(t *testing.T, c *slurmtest.Cluster) {
	if testing.Short() {
		t.Skip("a Slurm time limit is at least a minute")
	}
	p := loadCampaign(t, fmt.Sprintf(`
name: timeout
phases:
  - id: slow
    slurm: {partition: %s, time: 1m}
    steps:
      - run: sleep 300
`, c.Partition))
	st := start(t, p, testOptions(t)).finished(150 * time.Second)
	s := st.Phase("slow")
	if s.Status != Failed || !strings.Contains(s.Reason, "TIMEOUT") || s.Slurm.State != "TIMEOUT" {
		t.Errorf("slow = %s %q, job %+v; want failed with Slurm's TIMEOUT", s.Status, s.Reason, s.Slurm)
	}
}

func slurmService(t *testing.T, c *slurmtest.Cluster) {
	port := freePort(t)
	dir := t.TempDir()
	starts, seen := filepath.Join(dir, "starts"), filepath.Join(dir, "seen")
	p := loadCampaign(t, fmt.Sprintf(`
name: svc
phases:
  - id: serve
    slurm: {partition: %s}
    service:
      run: exec %s __test-http %d %s 1s
      ready: {http: "http://${GREENLIGHT_NODE}:%d/health", timeout: 60s}
  - id: use
    needs: [serve]
    steps:
      - run: |
          echo "node=$GREENLIGHT_NODE serve=$GREENLIGHT_NODE_SERVE" > %s
`, c.Partition, testBin(t), port, starts, port, seen))
	h := start(t, p, testOptions(t))
	h.kind(ServiceReady, "serve")
	st := h.finished(60 * time.Second)
	if s := st.Phase("serve"); s.Status != Done || s.Slurm == nil || s.Slurm.Node != "127.0.0.1" {
		t.Errorf("serve = %s %q, job %+v; want done, on the node's address", s.Status, s.Reason, s.Slurm)
	}
	if got := strings.TrimSpace(string(must(os.ReadFile(seen)))); got != "node=127.0.0.1 serve=127.0.0.1" {
		t.Errorf("the phase using the service saw %q", got)
	}
	if n := len(lines(t, starts)); n != 1 {
		t.Errorf("the service started %d times", n)
	}
}

func slurmPreflightPartition(t *testing.T, c *slurmtest.Cluster) {
	p := loadCampaign(t, fmt.Sprintf(`
name: pf
phases:
  - id: ok
    slurm: {partition: %s}
    steps: [{run: "true"}]
  - id: typo
    slurm: {partition: h200x}
    steps: [{run: "true"}]
`, c.Partition))
	probs := CheckPreflight(p, -1)
	err := PreflightError(probs)
	if err == nil || !strings.Contains(err.Error(), `Slurm has no partition "h200x" (phases typo); sinfo lists: `+c.Partition) {
		t.Errorf("preflight with a partition Slurm lacks: %v", err)
	}
	// The campaign sits in a temporary folder of this machine: said, as a
	// warning (here this machine is the node, so it works).
	if fs := localFS(p.Dir); fs != "" && !slices.ContainsFunc(probs, func(pr PreflightProblem) bool {
		return pr.Warn && strings.Contains(pr.What, "on "+fs+", a filesystem of this machine only")
	}) {
		t.Errorf("no warning that %s is not shared: %+v", fs, probs)
	}
}

// TestSlurmPreflightWithoutSbatch: a campaign on Slurm, run where Slurm's
// commands are not, stops before anything starts and says what to do.
func TestSlurmPreflightWithoutSbatch(t *testing.T) {
	p := loadCampaign(t, `
name: pf
slurm: {partition: h200}
phases:
  - id: a
    steps: [{run: "true"}]
`)
	t.Setenv("PATH", t.TempDir())
	probs := CheckPreflight(p, -1)
	if fs := localFS(p.Dir); fs != "" {
		// sbatch missing stops it before the filesystem is looked at.
		for _, pr := range probs {
			if strings.Contains(pr.What, "filesystem") {
				t.Errorf("said more than the missing sbatch: %q", pr.What)
			}
		}
	}
	err := PreflightError(probs)
	if err == nil || !strings.Contains(err.Error(), "sbatch is not on the PATH") || !strings.Contains(err.Error(), "login node") {
		t.Errorf("preflight without sbatch: %v", err)
	}
}

// slurmFreeze: f suspends the job (scontrol suspend) and thaws it; where
// Slurm refuses, the window says so and the job goes on.
func slurmFreeze(t *testing.T, c *slurmtest.Cluster, shim string, refused bool) {
	p := loadCampaign(t, fmt.Sprintf(`
name: freeze%v
phases:
  - id: long
    slurm: {partition: %s}
    steps:
      - run: |
          for i in $(seq 1 100); do echo tick $i; sleep 0.1; done
`, refused, c.Partition))
	h := start(t, p, testOptions(t))
	st := waitState(t, h, "the job running", func(s *State) bool { sj := s.Phase("long").Slurm; return sj != nil && sj.State == "RUNNING" })
	id := st.Phase("long").Slurm.ID
	if refused {
		f, _ := os.OpenFile(filepath.Join(shim, "refuse-suspend"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		fmt.Fprintln(f, id)
		f.Close()
	}
	if err := h.r.Freeze(); err != nil {
		t.Fatal(err)
	}
	if refused {
		e := h.until(30*time.Second, "the refusal said", func(e Event) bool {
			return e.Kind == Warning && strings.Contains(e.Message, "would not suspend job "+id) && strings.Contains(e.Message, "permission denied")
		})
		if ph := e.State.Phase("long"); ph.Frozen {
			t.Error("the phase still reads frozen after Slurm refused")
		}
		h.finished(60 * time.Second)
		return
	}
	want := func(state string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", id, "-o", "%T"))
			if got == state {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s is %s; want %s", id, got, state)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	want("SUSPENDED")
	if !h.r.Snapshot().Phase("long").Frozen {
		t.Error("the phase does not read frozen")
	}
	if err := h.r.Thaw(); err != nil {
		t.Fatal(err)
	}
	want("RUNNING")
	if s := h.finished(60 * time.Second).Phase("long"); s.Status != Done || !s.WasFrozen {
		t.Errorf("long = %s %q, was frozen %v", s.Status, s.Reason, s.WasFrozen)
	}
}

// slurmUnreachable: while Slurm's controller does not answer for a job,
// that is said once (not every poll), and the step's end is taken from its
// status file.
func slurmUnreachable(t *testing.T, c *slurmtest.Cluster, shim string) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	p := loadCampaign(t, fmt.Sprintf(`
name: silent
phases:
  - id: long
    slurm: {partition: %s}
    steps:
      - run: |
          while [ ! -e %s ]; do sleep 0.1; done
          echo '{"v": 3}' >> "$GREENLIGHT_RESULTS"
`, c.Partition, gate))
	h := start(t, p, testOptions(t))
	st := waitState(t, h, "the job running", func(s *State) bool { sj := s.Phase("long").Slurm; return sj != nil && sj.State == "RUNNING" })
	id := st.Phase("long").Slurm.ID
	f, _ := os.OpenFile(filepath.Join(shim, "unreachable"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	fmt.Fprintln(f, id)
	f.Close()
	// Two polls or more refused: the shim counts them.
	testutil.Eventually(t, 30*time.Second, "two polls of the job refused", func() bool {
		b, _ := os.ReadFile(filepath.Join(shim, "refused-"+id))
		return bytes.Count(b, []byte("\n")) >= 2
	})
	os.WriteFile(gate, nil, 0o644)
	st = h.finished(60 * time.Second)
	if s := st.Phase("long"); s.Status != Done || len(s.Steps[0].Results) != 1 {
		t.Errorf("long = %s %q, %d results; want done from its status file", s.Status, s.Reason, len(s.Steps[0].Results))
	}
	n := 0
	for _, w := range st.Warnings {
		if strings.Contains(w, "Slurm does not answer for job "+id) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("said %d times that Slurm does not answer; want once: %q", n, st.Warnings)
	}
}

// slurmRefused: a job sbatch refuses (more GPUs than any node has) fails
// its phase with sbatch's own words.
func slurmRefused(t *testing.T, c *slurmtest.Cluster) {
	p := loadCampaign(t, fmt.Sprintf(`
name: refused
phases:
  - id: big
    slurm: {partition: %s, gpus_per_node: 9}
    steps: [{run: "true"}]
`, c.Partition))
	s := start(t, p, testOptions(t)).finished(60 * time.Second).Phase("big")
	if s.Status != Failed || !strings.Contains(s.Reason, "sbatch refused the job") || !strings.Contains(s.Reason, "node configuration is not available") {
		t.Errorf("big = %s %q; want failed with sbatch's words", s.Status, s.Reason)
	}
}

// slurmServiceReadopt: a server loaded as a Slurm job outlives the runner;
// the next runner takes the same job back, ready, without a reload.
func slurmServiceReadopt(t *testing.T, c *slurmtest.Cluster) {
	port := freePort(t)
	dir := t.TempDir()
	count := filepath.Join(dir, "starts")
	p := loadCampaign(t, fmt.Sprintf(`
name: svc-readopt
phases:
  - id: serve
    slurm: {partition: %s}
    service:
      run: exec %s __test-http %d %s 200ms
      ready: {http: "http://${GREENLIGHT_NODE}:%d/health"}
  - id: use
    needs: [serve]
    gate: manual
    steps:
      - run: |
          echo "$GREENLIGHT_NODE" > %s/used
`, c.Partition, testBin(t), port, count, port, dir))
	stateDir := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, stateDir, `"kind":"service-ready"`)
	st := readoptedOnce(t, startAgain(t, p, stateDir, "use"), count, 60*time.Second)
	if st.Phase("use").Status != Done || st.Phase("serve").Status != Done {
		t.Errorf("use %s %q, serve %s %q", st.Phase("use").Status, st.Phase("use").Reason, st.Phase("serve").Status, st.Phase("serve").Reason)
	}
	if got := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "used"))))); got != "127.0.0.1" {
		t.Errorf("the phase using the re-adopted server got GREENLIGHT_NODE=%q", got)
	}
	if j := string(must(os.ReadFile(filepath.Join(stateDir, "journal.jsonl")))); strings.Count(j, `"kind":"step-job"`) != 1 {
		t.Errorf("the server was submitted more than once:\n%s", j)
	}
}

// TestJobNamesDifferByFolder: two campaigns of one name, in two folders,
// never name a step's job alike (a restarted runner finds its job by its
// name, and must not take the other campaign's).
func TestJobNamesDifferByFolder(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, "name: same\nslurm: {partition: x}\nphases:\n  - id: long\n    steps: [{run: \"true\"}]\n")
	r := &Runner{plan: p}
	pr := newPhaseRun(p.Phases[0], t.TempDir())
	a := &stepRun{r: r, pr: pr, dir: "/data/one/.greenlight/same/steps/long/a1-s1-t1"}
	b := &stepRun{r: r, pr: pr, dir: "/data/two/.greenlight/same/steps/long/a1-s1-t1"}
	if a.jobName() == b.jobName() || !strings.HasPrefix(a.jobName(), "gl.same.long.a1-s1-t1.") {
		t.Errorf("job names %q and %q", a.jobName(), b.jobName())
	}
}

// slurmDeafSkip: a running job whose batch script never gets the graceful
// SIGTERM (the scancel shim swallows it) is cancelled outright once its
// grace has run out; the phase reads skipped and Slurm holds no job.
func slurmDeafSkip(t *testing.T, c *slurmtest.Cluster, shim string) {
	p := loadCampaign(t, fmt.Sprintf(`
name: deaf
phases:
  - id: long
    slurm: {partition: %s}
    steps:
      - run: sleep 300
`, c.Partition))
	h := start(t, p, testOptions(t))
	st := waitState(t, h, "the job running", func(s *State) bool { sj := s.Phase("long").Slurm; return sj != nil && sj.State == "RUNNING" })
	id := st.Phase("long").Slurm.ID
	f, _ := os.OpenFile(filepath.Join(shim, "deaf-to-term"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	fmt.Fprintln(f, id)
	f.Close()
	if err := h.r.Skip("long"); err != nil {
		t.Fatal(err)
	}
	if s := h.finished(60 * time.Second).Phase("long"); s.Status != Skipped {
		t.Errorf("long = %s %q; want skipped", s.Status, s.Reason)
	}
	if out := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", id, "-o", "%T")); out != "" {
		t.Errorf("squeue still lists job %s: %s", id, out)
	}
}
