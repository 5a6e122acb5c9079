package client

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestStatusJSONSaysTheSlurmJob: status --json carries, per phase on
// Slurm, its job id, state, reason, nodes, expected start and queue wait.
func TestStatusJSONSaysTheSlurmJob(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte("name: s\nslurm: {partition: h200}\nphases:\n  - id: gemm\n    steps: [{run: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sub := time.Now().Add(-90 * time.Second)
	starts := time.Now().Add(10 * time.Minute)
	st := &runner.State{Name: "s", Started: sub, Phases: []runner.PhaseState{{ID: "gemm", Status: runner.Running, Started: sub,
		Steps: []runner.StepState{{Status: runner.Running, Progress: -1, ETA: runner.ETA{Queued: true, StartsAt: starts}}},
		ETA:   runner.ETA{Queued: true, StartsAt: starts},
		Slurm: &runner.SlurmJob{ID: "77", State: "PENDING", Reason: "Priority", Partition: "h200", Submitted: sub, StartsAt: starts}}}}
	b, _ := json.Marshal(StatusOf(plan, t.TempDir(), st))
	var got struct {
		Phases []struct {
			ETA   *StatusETA   `json:"eta"`
			Slurm *StatusSlurm `json:"slurm"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	sj := got.Phases[0].Slurm
	if sj == nil || sj.Job != "77" || sj.State != "PENDING" || sj.Reason != "Priority" || sj.Partition != "h200" || sj.ExpectedStart == nil || sj.QueueWaitS < 89 {
		t.Fatalf("slurm = %+v\n%s", sj, b)
	}
	if e := got.Phases[0].ETA; e == nil || e.StartsAt == nil || !strings.HasPrefix(e.Text, "starts ~") {
		t.Errorf("eta = %+v; want Slurm's expected start", e)
	}
}

// TestStatusPoints: a sweep's grid in status --json: points done when
// every repeat ran, the running one named with its repeat, a cut point
// skipped.
func TestStatusPoints(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte("name: p\nphases:\n  - id: g\n    sweep: {m: [1, 2, 3]}\n    repeat: 2\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatal(err)
	}
	// interleaved: m=1 r1, m=2 r1, m=3 r1, m=1 r2, m=2 r2, m=3 r2
	statuses := []runner.Status{runner.Done, runner.Done, runner.Skipped, runner.Done, runner.Running, runner.Skipped}
	ps := runner.PhaseState{ID: "g", Status: runner.Running, Current: 4}
	for i, s := range statuses {
		ps.Steps = append(ps.Steps, runner.StepState{Index: i, Status: s})
	}
	got := StatusOf(plan, t.TempDir(), &runner.State{Phases: []runner.PhaseState{ps}}).Phases[0].Points
	if got == nil || got.Done != 2 || got.Skipped != 1 || got.Total != 3 || got.Current != "m=2" || got.Repeat != 2 || got.Repeats != 2 {
		t.Fatalf("points = %+v; want 2 of 3 done (m=1, m=3 skipped), m=2 repeat 2 running", got)
	}
	if got.Status["m=1"] != "done" || got.Status["m=2"] != "running" || got.Status["m=3"] != "skipped" {
		t.Errorf("per point: %v", got.Status)
	}
}

// TestStatusServicePoint: a phase run under a swept service's point says
// which, in status --json.
func TestStatusServicePoint(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte("name: p\nphases:\n  - id: serve\n    sweep: {seqs: [64, 256]}\n    service:\n      run: |\n        serve ${seqs}\n      ready: {log: up}\n  - id: use\n    needs: [serve]\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := &runner.State{Phases: []runner.PhaseState{{ID: "serve.256", Status: runner.Ready}, {ID: "use.256", Status: runner.Running}}}
	got := StatusOf(plan, t.TempDir(), st).Phases
	if sp := got[1].ServicePoint; sp == nil || sp.Service != "serve" || sp.Phase != "use" || sp.Point != "seqs=256" || sp.Index != 2 || sp.Total != 2 || sp.Values["seqs"] != "256" {
		t.Errorf("use.256's service point %+v", sp)
	}
	if sp := got[0].ServicePoint; sp == nil || sp.Phase != "serve" {
		t.Errorf("serve.256's service point %+v", sp)
	}
}
