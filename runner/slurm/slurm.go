// Package slurm speaks to a Slurm cluster through its own commands
// (sbatch, scontrol, scancel, squeue, sinfo, sacct), as the person at the
// login node would: greenlight rides on the cluster's scheduler and never
// schedules anything itself. It imports nothing of ours.
//
// Every call has a deadline: a slurmctld that does not answer must never
// hold the runner's loop, which calls these from goroutines of its own.
package slurm

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/slurm/words"
)

// Timeout bounds every Slurm command; slurmctld's own MessageTimeout is
// 10 s by default.
const Timeout = 20 * time.Second

// Request is what a job asks Slurm for: the campaign file's `slurm:` key.
type Request struct {
	Partition   string
	Nodes       int
	GPUsPerNode int
	Time        time.Duration // 0: the partition's default
	Account     string
	Args        []string // passed to sbatch as written
	// Groups make a heterogeneous job, one component each, in order
	// (sbatch's `:`): the batch script runs on the first one's first
	// node, and `srun --het-group=N` reaches group N. Nodes and
	// GPUsPerNode above are then unused; Partition, Time, Account and Args
	// apply to each group, a group's own partition and args first.
	Groups []Group
}

// Group is one component of a heterogeneous job.
type Group struct {
	Partition   string
	Nodes       int
	GPUsPerNode int
	Args        []string
}

// Submit is one job to submit: a script run under the request.
type Submit struct {
	Request
	Name   string   // the job's name; greenlight finds an unjournaled job by it
	Script string   // path of the batch script (on the shared filesystem)
	Output string   // where the script's own stdout and stderr go (appended)
	Dir    string   // the job's working folder
	Env    []string // the environment sbatch passes on (--export=ALL)
}

// SbatchArgs are the arguments sbatch gets for s, the script last.
func (s Submit) SbatchArgs() []string {
	a := []string{"--parsable", "--job-name=" + s.Name, "--output=" + s.Output, "--open-mode=append", "--export=ALL"}
	if s.Dir != "" {
		a = append(a, "--chdir="+s.Dir)
	}
	groups := s.Groups
	if len(groups) == 0 {
		groups = []Group{{Nodes: s.Nodes, GPUsPerNode: s.GPUsPerNode}}
	}
	for i, g := range groups {
		if i > 0 {
			a = append(a, ":")
		}
		if p := cmp.Or(g.Partition, s.Partition); p != "" {
			a = append(a, "--partition="+p)
		}
		if g.Nodes > 0 {
			a = append(a, "--nodes="+strconv.Itoa(g.Nodes))
		}
		if g.GPUsPerNode > 0 {
			a = append(a, "--gpus-per-node="+strconv.Itoa(g.GPUsPerNode))
		}
		if s.Time > 0 {
			a = append(a, "--time="+TimeLimit(s.Time))
		}
		if s.Account != "" {
			a = append(a, "--account="+s.Account)
		}
		a = append(a, g.Args...)
		a = append(a, s.Args...)
	}
	return append(a, s.Script)
}

// TimeLimit writes d as sbatch's --time, D-HH:MM:SS, rounded up to a
// whole minute as Slurm counts limits in minutes.
func TimeLimit(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	if m < 1 {
		m = 1
	}
	return fmt.Sprintf("%d-%02d:%02d:00", m/(24*60), m/60%24, m%60)
}

// Sbatch submits s and returns the job id.
func Sbatch(ctx context.Context, s Submit) (string, error) {
	out, err := run(ctx, s.Env, "sbatch", s.SbatchArgs()...)
	if err != nil {
		return "", err
	}
	// --parsable: "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch answered %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// ErrUnknown is a job Slurm no longer knows (purged after MinJobAge, or
// never there).
var ErrUnknown = errors.New("job not known to Slurm")

// Show asks scontrol for one job.
func Show(ctx context.Context, id string) (*Job, error) {
	out, err := run(ctx, nil, "scontrol", "-o", "show", "job", id)
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return nil, ErrUnknown
		}
		return nil, err
	}
	var job *Job
	var parts []*Job // a heterogeneous job's components, the leader first
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "JobId="+id+" "):
			job = ParseJob(line)
			parts = append(parts, job)
		case strings.Contains(line, " HetJobId="+id+" "):
			parts = append(parts, ParseJob(line))
		}
	}
	if job == nil {
		return nil, ErrUnknown
	}
	return joinParts(job, parts), nil
}

// joinParts makes a heterogeneous job's components one job: the
// leader's, with every component's nodes, in order, and the state of a
// component Slurm ended abnormally (a node failed under the client's
// group) when the leader's says less.
func joinParts(job *Job, parts []*Job) *Job {
	if len(parts) < 2 {
		return job
	}
	var lists []string
	for _, p := range parts {
		job.GroupNodes = append(job.GroupNodes, p.Nodes)
		if p.Nodes != "" {
			lists = append(lists, p.Nodes)
		}
		if p != job && p.State.Abnormal() && !job.State.Abnormal() {
			job.State, job.Reason, job.ExitCode = p.State, p.Reason, p.ExitCode
		}
	}
	job.Nodes = strings.Join(lists, ",")
	return job
}

// Accounting asks sacct for a job Slurm's controller has forgotten. An
// error says accounting is off (or the job is not there either).
func Accounting(ctx context.Context, id string) (*Job, error) {
	out, err := run(ctx, nil, "sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,JobName,State,ExitCode,NodeList,Submit,Start,End,Reason")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 9 || f[0] != id {
			continue
		}
		j := &Job{ID: f[0], Name: f[1], State: words.State(strings.Fields(f[2] + " ")[0]), ExitCode: f[3],
			Nodes: f[4], Reason: f[8], Submitted: parseTime(f[5]), Started: parseTime(f[6]), Ended: parseTime(f[7])}
		return j, nil
	}
	return nil, ErrUnknown
}

// FindByName lists the ids of this user's jobs of the given name that
// Slurm still knows, in any state.
func FindByName(ctx context.Context, name string) ([]string, error) {
	out, err := run(ctx, nil, "squeue", "-h", "-t", "all", "--me", "-n", name, "-o", "%i")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Signal sends sig to the job's batch script only (greenlight's
// supervisor, which stops the step's group gracefully and records how it
// ended).
func Signal(ctx context.Context, id, sig string) error {
	_, err := run(ctx, nil, "scancel", "--batch", "--signal="+sig, id)
	return err
}

// Cancel ends the job, pending or running.
func Cancel(ctx context.Context, id string) error {
	_, err := run(ctx, nil, "scancel", id)
	return err
}

// Suspend stops every process of a running job (SIGSTOP on its nodes);
// Slurm allows it to operators and administrators only.
func Suspend(ctx context.Context, id string) error {
	_, err := run(ctx, nil, "scontrol", "suspend", id)
	return err
}

// Resume continues a suspended job.
func Resume(ctx context.Context, id string) error {
	_, err := run(ctx, nil, "scontrol", "resume", id)
	return err
}

// NodeAddr is the address Slurm reaches a node by (NodeAddr, which is the
// node's name unless the cluster says otherwise).
func NodeAddr(ctx context.Context, node string) (string, error) {
	out, err := run(ctx, nil, "scontrol", "-o", "show", "node", node)
	if err != nil {
		return "", err
	}
	f := fields(strings.TrimSpace(out))
	if a := f["NodeAddr"]; a != "" {
		return a, nil
	}
	return node, nil
}

// FailedNodes names those of the nodes (a Slurm node list) that Slurm
// holds down, drained or not responding, each with its reason:
// "n4 (Not responding)". A job ended NODE_FAIL, or requeued, names its
// node list; this says which of them failed.
func FailedNodes(ctx context.Context, list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	out, err := run(ctx, nil, "scontrol", "-o", "show", "node", list)
	if err != nil {
		return nil, err
	}
	var failed []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := fields(line)
		state := f["State"]
		if f["NodeName"] == "" || !strings.Contains(state, "DOWN") && !strings.Contains(state, "NOT_RESPONDING") &&
			!strings.Contains(state, "DRAIN") && !strings.Contains(state, "FAIL") {
			continue
		}
		why := f["Reason"]
		if i := strings.Index(why, " ["); i > 0 {
			why = why[:i] // "Not responding [slurm@2026-12-05T07:03:58]"
		}
		if why == "" || why == "(null)" {
			why = strings.ToLower(state)
		}
		failed = append(failed, f["NodeName"]+" ("+why+")")
	}
	return failed, nil
}

// Partitions lists the cluster's partitions.
func Partitions(ctx context.Context) ([]string, error) {
	out, err := run(ctx, nil, "sinfo", "-h", "-o", "%R")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// run runs a Slurm command with a deadline, returning its stdout, or an
// error carrying what it said on stderr.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s did not answer within %s", name, Timeout)
		}
		if msg != "" {
			return "", fmt.Errorf("%s: %s", name, lastLines(msg))
		}
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return stdout.String(), nil
}

// lastLines keeps the last three lines of what a command said, on one line.
func lastLines(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, "; ")
}

// Available says whether sbatch is on the PATH, and if not, what to do.
func Available() error {
	if _, err := exec.LookPath("sbatch"); err != nil {
		return fmt.Errorf("sbatch is not on the PATH (%s)", os.Getenv("PATH"))
	}
	return nil
}
