package slurm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/slurm"
	"github.com/greenlight-run/greenlight/runner/slurm/slurmtest"
	"github.com/greenlight-run/greenlight/runner/slurm/words"
)

// A line as scontrol 22.05 writes it, with a folder holding spaces.
const pendingLine = `JobId=4 JobName=gl.x.y UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901756 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=Resources Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:01:00 TimeMin=N/A SubmitTime=2026-12-03T12:37:41 EligibleTime=2026-12-03T12:37:41 AccrueTime=2026-12-03T12:37:41 StartTime=2026-12-03T14:05:00 EndTime=Unknown Deadline=N/A Partition=debug NodeList= NumNodes=1 WorkDir=/tmp/my runs/a StdOut=/dev/null Power= `

func TestParseJob(t *testing.T) {
	j := slurm.ParseJob(pendingLine)
	if j.ID != "4" || j.Name != "gl.x.y" || j.State != "PENDING" || j.Reason != "Resources" || j.TimeLimit != "00:01:00" {
		t.Fatalf("parsed %+v", j)
	}
	want := time.Date(2026, 12, 3, 14, 5, 0, 0, time.Local)
	if !j.Started.Equal(want) || !j.Ended.IsZero() || j.Nodes != "" {
		t.Fatalf("times/nodes: %+v", j)
	}
	if !j.State.Pending() || j.State.Terminal() {
		t.Fatal("PENDING is pending, not terminal")
	}
	j = slurm.ParseJob(strings.Replace(strings.Replace(pendingLine, "PENDING", "TIMEOUT", 1), "ExitCode=0:0", "ExitCode=0:15", 1))
	if c, s := j.Code(); c != 0 || s != 15 || !j.State.Abnormal() || !strings.Contains(j.Why(), "TIMEOUT") || !strings.Contains(j.Why(), "00:01:00") {
		t.Fatalf("TIMEOUT: %+v %q", j, j.Why())
	}
}

func TestWhySlurmEndedIt(t *testing.T) {
	for state, want := range map[words.State]string{
		"NODE_FAIL":     "a node of the job failed: gpu[01-02]",
		"OUT_OF_MEMORY": "out of its memory",
		"PREEMPTED":     "higher priority",
		"CANCELLED":     "outside greenlight",
	} {
		j := &slurm.Job{State: state, Nodes: "gpu[01-02]"}
		if !state.Abnormal() || !state.Terminal() || !strings.Contains(j.Why(), string(state)) || !strings.Contains(j.Why(), want) {
			t.Errorf("%s: abnormal %v terminal %v, %q", state, state.Abnormal(), state.Terminal(), j.Why())
		}
	}
	j := &slurm.Job{State: "NODE_FAIL", Nodes: "n[3-4]", Failed: []string{"n4 (Not responding)"}}
	if got := j.Why(); got != "Slurm ended the job: NODE_FAIL (node n4 (Not responding) failed; the job ran on n[3-4])" {
		t.Errorf("NODE_FAIL with the failed node known: %q", got)
	}
	if s := words.State("COMPLETED"); s.Abnormal() || !s.Terminal() {
		t.Error("COMPLETED is a normal end")
	}
	if s := words.State("RUNNING"); s.Terminal() || s.Pending() {
		t.Error("RUNNING is neither over nor queued")
	}
}

func TestTimeLimit(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second: "0-00:01:00", 90 * time.Minute: "0-01:30:00", 50 * time.Hour: "2-02:00:00", 61 * time.Second: "0-00:02:00",
	} {
		if got := slurm.TimeLimit(d); got != want {
			t.Errorf("TimeLimit(%s) = %s, want %s", d, got, want)
		}
	}
}

// Against a real cluster: submit, see it run, find it by name, cancel.
func TestAgainstSlurm(t *testing.T) {
	c := slurmtest.Start(t)
	t.Setenv("SLURM_CONF", c.Conf)
	ctx := context.Background()
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho on $SLURMD_NODENAME; sleep 30\n"), 0o755)
	parts, err := slurm.Partitions(ctx)
	if err != nil || len(parts) != 1 || parts[0] != c.Partition {
		t.Fatalf("partitions %v %v", parts, err)
	}
	id, err := slurm.Sbatch(ctx, slurm.Submit{Request: slurm.Request{Partition: c.Partition, Nodes: 1, GPUsPerNode: 1, Time: time.Minute},
		Name: "gl.test.one", Script: script, Output: filepath.Join(dir, "out.log"), Dir: dir, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	var j *slurm.Job
	for range 100 {
		if j, err = slurm.Show(ctx, id); err != nil {
			t.Fatal(err)
		}
		if j.State == "RUNNING" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if j.State != "RUNNING" || j.BatchHost != c.Node || j.TimeLimit != "00:01:00" {
		t.Fatalf("job %+v", j)
	}
	if ids, err := slurm.FindByName(ctx, "gl.test.one"); err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("FindByName: %v %v", ids, err)
	}
	if a, err := slurm.NodeAddr(ctx, j.BatchHost); err != nil || a != "127.0.0.1" {
		t.Fatalf("NodeAddr %q %v", a, err)
	}
	if err := slurm.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		j, _ = slurm.Show(ctx, id)
		if j != nil && j.State.Terminal() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if j == nil || j.State != "CANCELLED" {
		t.Fatalf("after scancel: %+v", j)
	}
	if _, err := slurm.Show(ctx, "999999"); err != slurm.ErrUnknown {
		t.Fatalf("unknown job: %v", err)
	}
	if _, err := slurm.Accounting(ctx, id); err == nil || !strings.Contains(err.Error(), "accounting") {
		t.Fatalf("sacct with accounting off: %v", err)
	}
}

func TestHostnames(t *testing.T) {
	for list, want := range map[string]string{
		"vm":                   "vm",
		"gpu[01-03,07],login1": "gpu01 gpu02 gpu03 gpu07 login1",
		"rack[1-2]-gpu[8-9]":   "rack1-gpu8 rack1-gpu9 rack2-gpu8 rack2-gpu9",
		"n[098-101]":           "n098 n099 n100 n101",
		"":                     "",
		"odd[x-y]":             "odd[x-y]",
		"a[1-2],b,c[3]":        "a1 a2 b c3",
	} {
		if got := strings.Join(words.Hostnames(list), " "); got != want {
			t.Errorf("Hostnames(%q) = %q, want %q", list, got, want)
		}
	}
}

// TestHeterogeneousSbatch: groups make one sbatch of components split by
// `:`, the job's own options first, each group its partition (or the
// job's), nodes, GPUs, the job's time and account, and its args. (Its
// components read back as one job: runner's TestSlurmNodes.)
func TestHeterogeneousSbatch(t *testing.T) {
	s := slurm.Submit{Request: slurm.Request{Partition: "h200", Time: time.Hour, Args: []string{"--exclusive"},
		Groups: []slurm.Group{{Nodes: 2, GPUsPerNode: 8}, {Partition: "cpu", Nodes: 1, Args: []string{"--mem=8G"}}}},
		Name: "gl.x", Script: "/s/job.sh", Output: "/s/log", Dir: "/s"}
	got := strings.Join(s.SbatchArgs(), " ")
	want := "--parsable --job-name=gl.x --output=/s/log --open-mode=append --export=ALL --chdir=/s " +
		"--partition=h200 --nodes=2 --gpus-per-node=8 --time=0-01:00:00 --exclusive : " +
		"--partition=cpu --nodes=1 --time=0-01:00:00 --mem=8G --exclusive /s/job.sh"
	if got != want {
		t.Errorf("sbatch %s\nwant   %s", got, want)
	}
}
