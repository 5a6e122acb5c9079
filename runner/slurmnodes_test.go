package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/slurm/slurmtest"
)

// TestSlurmNodes runs phases as jobs over several nodes of a simulated
// cluster (slurmtest.StartNodes: each node a network namespace with its
// own host name, address and 8 fake GPUs), and fails nodes under them.
// Its partitions keep the cases apart: a node failed in one never holds
// another's job.
//
// Not parallel with the other tests: the runner calls Slurm's commands by
// name, so PATH (the cluster's client wrappers) and SLURM_CONF are the
// process's; TestSlurm sets its own once this has ended (it is parallel,
// and Go starts parallel top-level tests after the others).
func TestSlurmNodes(t *testing.T) {
	c := slurmtest.StartNodes(t, 8, 8, "a=n[1-2]", "lose=n[3-5]", "requeue=n[6-8]")
	t.Setenv("SLURM_CONF", c.Conf)
	t.Setenv("PATH", c.Bin+":"+os.Getenv("PATH"))
	t.Run("cases", func(t *testing.T) {
		t.Run("TwoNodeJob", func(t *testing.T) { t.Parallel(); nodesTwoNodeJob(t, c) })
		t.Run("HeterogeneousJob", func(t *testing.T) { t.Parallel(); nodesHeterogeneous(t, c) })
		t.Run("RunnerKilledReadoptsTheJob", func(t *testing.T) { t.Parallel(); nodesReadopt(t, c) })
		t.Run("NodeLostFailsTheServiceAndItsDependents", func(t *testing.T) { t.Parallel(); nodesLost(t, c) })
		t.Run("RequeuedJobFollowed", func(t *testing.T) { t.Parallel(); nodesRequeued(t, c) })
	})
}

func nodesTwoNodeJob(t *testing.T, c *slurmtest.Nodes) {
	p := loadCampaign(t, `
name: span
slurm: {partition: a, nodes: 2, gpus_per_node: 1, time: 5m}
phases:
  - id: span
    steps:
      - run: |
          srun --ntasks-per-node=1 sh -c 'echo "task on $(hostname) gpus=$SLURM_GPUS_ON_NODE"'
          echo '{"nodes": '$SLURM_JOB_NUM_NODES'}' >> "$GREENLIGHT_RESULTS"
`)
	h := start(t, p, testOptions(t))
	st := h.finished(60 * time.Second)
	s := st.Phase("span")
	if s.Status != Done {
		t.Fatalf("span = %s %q", s.Status, s.Reason)
	}
	if s.Slurm == nil || s.Slurm.Nodes != "n[1-2]" || s.Slurm.Node != c.Addr("n1") || s.Slurm.State != "COMPLETED" {
		t.Errorf("span's job = %+v; want COMPLETED on n[1-2], its batch script on n1 (%s)", s.Slurm, c.Addr("n1"))
	}
	log := string(must(os.ReadFile(s.Steps[0].Log)))
	for _, want := range []string{"task on n1 gpus=1", "task on n2 gpus=1"} {
		if !strings.Contains(log, want) {
			t.Errorf("the step's log lacks %q:\n%s", want, log)
		}
	}
	if rows := s.Steps[0].Results; len(rows) != 1 || rows[0].Values[0] != 2.0 {
		t.Errorf("results = %+v; want nodes=2", rows)
	}
	h.r.Close()
	again, err := Replay(p, h.r.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	if j := again.Phase("span").Slurm; j == nil || j.Nodes != "n[1-2]" {
		t.Errorf("the journal's job = %+v; want its nodes n[1-2]", j)
	}
}

// nodesHeterogeneous: slurm: groups runs one heterogeneous job, a server
// group with GPUs and a client group without, each reached by srun
// --het-group; the job's nodes are both groups'.
func nodesHeterogeneous(t *testing.T, c *slurmtest.Nodes) {
	p := loadCampaign(t, `
name: het
slurm:
  partition: a
  groups:
    - {nodes: 1, gpus_per_node: 2}
    - {nodes: 1}
phases:
  - id: pair
    steps:
      - run: |
          srun --het-group=0 sh -c 'echo "server on $(hostname) gpus=$SLURM_GPUS_ON_NODE"'
          srun --het-group=1 sh -c 'echo "client on $(hostname) gpus=${SLURM_GPUS_ON_NODE:-0}"'
`)
	st := start(t, p, testOptions(t)).finished(60 * time.Second)
	s := st.Phase("pair")
	if s.Status != Done {
		t.Fatalf("pair = %s %q", s.Status, s.Reason)
	}
	nodes := s.Slurm.NodeNames()
	if len(nodes) != 2 || nodes[0] == nodes[1] || s.Slurm.State != "COMPLETED" {
		t.Fatalf("pair's job = %+v; want COMPLETED on two nodes, one a group", s.Slurm)
	}
	log := string(must(os.ReadFile(s.Steps[0].Log)))
	for _, want := range []string{"server on " + nodes[0] + " gpus=2", "client on " + nodes[1] + " gpus=0"} {
		if !strings.Contains(log, want) {
			t.Errorf("the step's log lacks %q:\n%s", want, log)
		}
	}
}

func nodesReadopt(t *testing.T, c *slurmtest.Nodes) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	p := loadCampaign(t, fmt.Sprintf(`
name: readopt-nodes
slurm: {partition: a, nodes: 2, gpus_per_node: 1}
phases:
  - id: long
    steps:
      - run: |
          echo "$SLURM_JOB_ID" >> %s
          srun --ntasks-per-node=1 sleep 4
          echo '{"v": 7}' >> "$GREENLIGHT_RESULTS"
`, count))
	stateDir := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, stateDir, `"kind":"step-job","phase":"long"`)
	st := startAgain(t, p, stateDir).finished(60 * time.Second)
	s := st.Phase("long")
	if s.Status != Done || !s.Readopted || s.Slurm.Nodes != "n[1-2]" {
		t.Fatalf("long = %s %q readopted=%v job %+v; want done, re-adopted, on n[1-2]", s.Status, s.Reason, s.Readopted, s.Slurm)
	}
	if ran := lines(t, count); len(ran) != 1 || ran[0] != s.Slurm.ID {
		t.Errorf("jobs that ran %v; want one, the journaled %s", ran, s.Slurm.ID)
	}
}

// nodesLost: a two-node service loses a node mid-phase (its link cut).
// The service fails in Slurm's words, naming the node; the phase that
// used it fails saying why; a retry runs it on the nodes left.
func nodesLost(t *testing.T, c *slurmtest.Nodes) {
	p := loadCampaign(t, `
name: lose
slurm: {partition: lose, nodes: 2, gpus_per_node: 8, args: [--no-requeue]}
phases:
  - id: serve
    service:
      run: |
        srun --ntasks-per-node=1 sh -c 'echo "rank on $(hostname)"; exec sleep 600' &
        sleep 1
        echo "Application startup complete"
        wait
      ready: {log: 'Application startup complete', timeout: 60s}
  - id: bench
    needs: [serve]
    slurm: off
    gpus: none
    steps:
      - run: sleep 600
`)
	h := start(t, p, testOptions(t))
	h.kind(ServiceReady, "serve")
	h.kind(StepStarted, "bench")
	nodes := jobNodes(t, h, "serve")
	if len(nodes) != 2 {
		t.Fatalf("serve's job runs on %v; want two nodes", nodes)
	}
	lost := nodes[1]
	t.Cleanup(func() { c.Node(t, "link-up", lost) })
	c.Node(t, "link-down", lost)
	t0 := time.Now()
	h.until(60*time.Second, "serve failed", func(e Event) bool {
		return e.Kind == PhaseFinished && e.Phase == "serve" && e.State.Phase("serve").Status == Failed
	})
	t.Logf("serve failed %.1f s after %s's link was cut", time.Since(t0).Seconds(), lost)
	h.until(30*time.Second, "bench failed", func(e Event) bool {
		return e.Kind == PhaseFinished && e.Phase == "bench" && e.State.Phase("bench").Status == Failed
	})
	st := h.r.Snapshot()
	serve, bench := st.Phase("serve"), st.Phase("bench")
	t.Logf("serve: %s\nbench: %s", serve.Reason, bench.Reason)
	if !strings.Contains(serve.Reason, "NODE_FAIL") || !strings.Contains(serve.Reason, "node "+lost) {
		t.Errorf("serve = %s %q; want NODE_FAIL naming node %s", serve.Status, serve.Reason, lost)
	}
	if serve.Slurm == nil || serve.Slurm.State != "NODE_FAIL" {
		t.Errorf("serve's job = %+v; want NODE_FAIL", serve.Slurm)
	}
	if !strings.Contains(bench.Reason, "serve") || !strings.Contains(bench.Reason, "NODE_FAIL") {
		t.Errorf("bench = %s %q; want failed for serve's NODE_FAIL", bench.Status, bench.Reason)
	}
	first := serve.Slurm.ID
	if err := h.r.Retry("serve"); err != nil {
		t.Fatal(err)
	}
	h.until(60*time.Second, "serve ready again", func(e Event) bool { return e.Kind == ServiceReady && e.Phase == "serve" })
	jobNodes(t, h, "serve")
	again := h.r.Snapshot().Phase("serve").Slurm
	if again.ID == first || strings.Contains(strings.Join(again.NodeNames(), " "), lost) || len(again.NodeNames()) != 2 {
		t.Errorf("the retried serve's job = %+v; want a new job on the two nodes left (not %s)", again, lost)
	}
}

// nodesRequeued: a job Slurm requeues after a node failure (no
// --no-requeue) is followed as the same job: queued again, then run
// again, never submitted anew nor taken for ended; the rows the killed
// run wrote (one before its srun, another as it completes, when Slurm
// lets it) are not the step's. The lost node's srun may fail before
// Slurm has marked the node down; the batch script then waits on, as a
// server's would, for Slurm to requeue it rather than completing first.
func nodesRequeued(t *testing.T, c *slurmtest.Nodes) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	p := loadCampaign(t, fmt.Sprintf(`
name: requeue
slurm: {partition: requeue, nodes: 2, gpus_per_node: 8}
phases:
  - id: long
    steps:
      - run: |
          echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST restart=${SLURM_RESTART_COUNT:-0}" >> %s
          if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then echo '{"restarts": 0}' >> "$GREENLIGHT_RESULTS"; srun --ntasks-per-node=1 sleep 600 || sleep 600; fi
          echo '{"restarts": '${SLURM_RESTART_COUNT:-0}'}' >> "$GREENLIGHT_RESULTS"
`, runs))
	h := start(t, p, testOptions(t))
	h.kind(StepStarted, "long")
	nodes := jobNodes(t, h, "long")
	if len(nodes) != 2 {
		t.Fatalf("long's job runs on %v; want two nodes", nodes)
	}
	lost := nodes[1]
	t.Cleanup(func() { c.Node(t, "link-up", lost) })
	c.Node(t, "link-down", lost)
	e := h.until(60*time.Second, "the job requeued", func(e Event) bool { return e.Phase == "long" && strings.Contains(e.Message, "requeued") })
	t.Logf("said: %s", e.Message)
	if !strings.Contains(e.Message, "node "+lost) {
		t.Errorf("the requeue is said %q; want the failed node %s named", e.Message, lost)
	}
	id := h.r.Snapshot().Phase("long").Slurm.ID
	// Slurm holds a requeued job some two minutes (BeginTime) once its
	// killed run has completed; an administrator may let it go at once,
	// as this test does.
	if !testutil.Within(60*time.Second, func() bool {
		return strings.Contains(c.Run(t, "scontrol", "-o", "show", "job", id), "JobState=PENDING")
	}) {
		t.Fatalf("job %s never pending again after its requeue:\n%s", id, c.Run(t, "scontrol", "-o", "show", "job", id))
	}
	c.Run(t, "scontrol", "update", "jobid="+id, "StartTime=now")
	// Its second run's start names both its nodes: the killed run still
	// completing on the node left is not it.
	second := h.until(60*time.Second, "the requeued job's second run", func(e Event) bool {
		return e.Kind == StepStarted && e.Phase == "long" && strings.Contains(e.Message, "runs on")
	})
	if !strings.Contains(second.Message, "runs on n[") {
		t.Errorf("the second run's start is said %q; want it on two nodes", second.Message)
	}
	st := h.finished(60 * time.Second)
	s := st.Phase("long")
	if s.Status != Done || s.Slurm.ID != id {
		t.Fatalf("long = %s %q, job %+v; want done as job %s", s.Status, s.Reason, s.Slurm, id)
	}
	if rows := s.Steps[0].Results; len(rows) != 1 || rows[0].Values[0] != 1.0 {
		t.Errorf("results = %+v; want the requeued run's (restarts=1) alone", rows)
	}
	ran := strings.Split(strings.TrimSpace(string(must(os.ReadFile(runs)))), "\n")
	if len(ran) != 2 || !strings.HasPrefix(ran[0], id+" ") || !strings.HasPrefix(ran[1], id+" ") {
		t.Errorf("runs %q; want job %s twice (run, then requeued)", ran, id)
	}
	if j := string(must(os.ReadFile(filepath.Join(h.r.StateDir(), "journal.jsonl")))); strings.Count(j, `"kind":"step-job"`) != 1 {
		t.Errorf("submitted more than once:\n%s", j)
	}
	// The record says it: from the journal alone.
	h.r.Close()
	again, err := Replay(p, h.r.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	if j := again.Phase("long").Slurm; j == nil || j.Restarts != 1 || !strings.Contains(j.Words(time.Now()), "node "+lost+" (Not responding) failed · requeued once by Slurm") {
		t.Errorf("the journal's job = %+v; want it requeued once after %s failed", j, lost)
	}
}

// jobNodes waits for Slurm's word on the phase's job's nodes (its status
// file may say it runs first).
func jobNodes(t *testing.T, h *harness, phase string) []string {
	t.Helper()
	var nodes []string
	if !testutil.Within(20*time.Second, func() bool {
		nodes = h.r.Snapshot().Phase(phase).Slurm.NodeNames()
		return len(nodes) > 0
	}) {
		t.Fatalf("Slurm never said where %s's job runs", phase)
	}
	return nodes
}
