package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestBackendOfAPhase: a phase with slurm: runs its steps on the Slurm
// backend, any other here; each answers the loop's questions (where it
// runs, what it waited in a queue) from its own record, and follow asks
// nothing else of either.
func TestBackendOfAPhase(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: be
phases:
  - id: here
    steps:
      - run: |
          true
  - id: there
    slurm: {partition: h200}
    steps:
      - run: |
          true
`)
	r := &Runner{plan: p}
	here := &stepRun{r: r, pr: newPhaseRun(p.Phases[0], t.TempDir()), step: p.Phases[0].Steps[0]}
	there := &stepRun{r: r, pr: newPhaseRun(p.Phases[1], t.TempDir()), step: p.Phases[1].Steps[0]}
	if _, ok := here.on().(*localBackend); !ok {
		t.Fatalf("here runs on %T", here.on())
	}
	if _, ok := there.on().(*slurmBackend); !ok || there.job == nil {
		t.Fatalf("there runs on %T (job %v)", there.on(), there.job)
	}
	if here.on().node() != "localhost" || here.on().remoteClock() {
		t.Errorf("a local step runs on %q, remote clock %v", here.on().node(), here.on().remoteClock())
	}
	if _, queued, _ := here.on().queue(); queued {
		t.Error("a local step waits in a queue")
	}
	if there.on().node() != "" || !there.on().remoteClock() {
		t.Errorf("a job not yet placed runs on %q, remote clock %v", there.on().node(), there.on().remoteClock())
	}
	starts := time.Now().Add(time.Hour)
	there.pr.state.Slurm = &SlurmJob{ID: "7", State: "PENDING", QueueWait: 5 * time.Minute, StartsAt: starts}
	if waited, queued, at := there.on().queue(); !queued || waited != 5*time.Minute || !at.Equal(starts) {
		t.Errorf("queue = %v %v %v; want queued 5m, starting %v", waited, queued, at, starts)
	}
	there.job.nodeAddr = "10.0.0.7"
	if there.on().node() != "10.0.0.7" {
		t.Errorf("node = %q", there.on().node())
	}
}

// TestSupervisorCommand: the supervisor's own binary beside greenlight is
// used when it is there (a step starts without greenlight's package
// init); otherwise greenlight's hidden subcommand.
func TestSupervisorCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "greenlight")
	if got := SupervisorCommand(exe); len(got) != 2 || got[0] != exe || got[1] != supervise.Command {
		t.Errorf("no supervisor beside greenlight: %v", got)
	}
	sup := filepath.Join(dir, SupervisorName)
	os.WriteFile(sup, []byte("#!/bin/sh\n"), 0o644)
	if got := SupervisorCommand(exe); got[0] != exe {
		t.Errorf("a supervisor that cannot run was taken: %v", got)
	}
	os.Chmod(sup, 0o755)
	if got := SupervisorCommand(exe); len(got) != 1 || got[0] != sup {
		t.Errorf("the supervisor beside greenlight: %v", got)
	}
}
