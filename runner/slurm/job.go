package slurm

import (
	"strconv"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/slurm/words"
)

// Job is what Slurm says of one job.
type Job struct {
	ID        string
	Name      string
	State     words.State
	Reason    string // why it pends, or why it ended ("None" left out)
	Nodes     string // the node list as Slurm writes it: gpu[01-02]
	BatchHost string // the node the batch script runs on
	Submitted time.Time
	Started   time.Time // when it started; for a pending job, Slurm's expected start
	Ended     time.Time
	ExitCode  string // "code:signal"
	TimeLimit string
	Restarts  int // how many times Slurm requeued it (a node failure, a preemption)
	// GroupNodes are a heterogeneous job's components' node lists, in
	// order (Nodes joins them); nil for a job of one component.
	GroupNodes []string
	// Failed names the job's nodes that were down when it ended or was
	// requeued, with Slurm's reason ("n4 (Not responding)"): filled in by
	// FailedNodes, not by scontrol's line about the job.
	Failed []string
}

// Code is the job's exit code and the signal that ended it, from
// "code:signal".
func (j *Job) Code() (code, signal int) {
	a, b, _ := strings.Cut(j.ExitCode, ":")
	code, _ = strconv.Atoi(a)
	signal, _ = strconv.Atoi(b)
	return code, signal
}

// Why says how Slurm ended an abnormal job, for a step's reason.
func (j *Job) Why() string {
	s := "Slurm ended the job: " + string(j.State)
	switch j.State {
	case "TIMEOUT":
		s += " (it ran past its time limit"
		if j.TimeLimit != "" {
			s += " of " + j.TimeLimit
		}
		s += ")"
	case "NODE_FAIL":
		s += " (" + j.FailedWords() + ")"
	case "OUT_OF_MEMORY":
		s += " (it ran out of its memory allocation)"
	case "CANCELLED":
		s += " (cancelled outside greenlight: scancel, an administrator or a dependency)"
	case "PREEMPTED":
		s += " (preempted by a job of higher priority)"
	}
	return s
}

// FailedWords says which of the job's nodes failed: "node n4 (Not
// responding) failed; the job ran on n[3-4]", or "a node of the job failed: n[3-4]" where
// Slurm did not say which.
func (j *Job) FailedWords() string {
	switch len(j.Failed) {
	case 0:
		return "a node of the job failed: " + j.Nodes
	case 1:
		return "node " + j.Failed[0] + " failed; the job ran on " + j.Nodes
	}
	return "nodes " + strings.Join(j.Failed, ", ") + " failed; the job ran on " + j.Nodes
}

// ParseJob reads one line of `scontrol -o show job`. Values may hold
// spaces (a command, a folder): a word that does not start a new Key= is
// part of the value before it.
func ParseJob(line string) *Job {
	f := fields(line)
	j := &Job{ID: f["JobId"], Name: f["JobName"], State: words.State(f["JobState"]), Reason: f["Reason"],
		Nodes: f["NodeList"], BatchHost: f["BatchHost"], ExitCode: f["ExitCode"], TimeLimit: f["TimeLimit"],
		Submitted: parseTime(f["SubmitTime"]), Started: parseTime(f["StartTime"]), Ended: parseTime(f["EndTime"])}
	j.Restarts, _ = strconv.Atoi(f["Restarts"])
	if j.Reason == "None" || j.Reason == "(null)" {
		j.Reason = ""
	}
	if j.Nodes == "(null)" {
		j.Nodes = ""
	}
	return j
}

func fields(line string) map[string]string {
	out := map[string]string{}
	last := ""
	for _, w := range strings.Split(line, " ") {
		k, v, ok := strings.Cut(w, "=")
		if ok && isKey(k) {
			out[k], last = v, k
			continue
		}
		if last != "" && w != "" {
			out[last] += " " + w
		}
	}
	return out
}

func isKey(k string) bool {
	if k == "" || k[0] < 'A' || k[0] > 'Z' {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '/' || c == '_') {
			return false
		}
	}
	return true
}

// parseTime reads Slurm's local times (2026-12-03T12:37:41); "Unknown",
// "None" and "N/A" are zero.
func parseTime(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}
