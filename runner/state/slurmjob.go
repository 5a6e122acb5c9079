package state

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/slurm/words"
)

// What the window, `status` and the results file show of a phase's Slurm
// job, and the words they say it in.

// SlurmJob is what the window, `status --json` and the results file show
// of a phase's current (or last) Slurm job.
type SlurmJob struct {
	ID        string    `json:",omitzero"`
	State     string    `json:",omitzero"` // Slurm's: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
	Reason    string    `json:",omitzero"` // why it pends (Resources, Priority, ...) or how it ended
	Nodes     string    `json:",omitzero"` // Slurm's node list: gpu[01-02]
	Node      string    `json:",omitzero"` // the address of the node the batch script runs on: ${GREENLIGHT_NODE}
	Partition string    `json:",omitzero"`
	Submitted time.Time `json:",omitzero"`
	Started   time.Time `json:",omitzero"` // when it started running
	StartsAt  time.Time `json:",omitzero"` // Slurm's expected start, while it pends
	// QueueWait is the time from submission to start, or so far while it
	// pends.
	QueueWait time.Duration `json:",omitzero"`
	Restarts  int           `json:",omitzero"` // times Slurm requeued it (a node failed under it)
	Failed    []string      `json:",omitzero"` // its nodes Slurm held down when it ended or was requeued: "n4 (Not responding)"
}

// Queued says the job waits in Slurm's queue.
func (j *SlurmJob) Queued() bool {
	return j != nil && (j.State == "SUBMITTING" || words.State(j.State).Pending())
}

// NodeNames are the job's nodes, its node list expanded.
func (j *SlurmJob) NodeNames() []string {
	if j == nil {
		return nil
	}
	return words.Hostnames(j.Nodes)
}

// OnThisMachine says whether the job runs (or ran) on the machine this
// runner is on: its node list names this host.
func (j *SlurmJob) OnThisMachine() bool {
	host := thisHost()
	if j == nil || host == "" {
		return false
	}
	for _, n := range j.NodeNames() {
		if n, _, _ = strings.Cut(n, "."); n == host {
			return true
		}
	}
	return false
}

// Words says the job in a line, for the window, `status` and the results
// file: "Slurm job 1234 PENDING (Resources) · queued 2m · starts ~14:05",
// "Slurm job 1234 RUNNING on gpu[01-02] · queued 3s".
func (j *SlurmJob) Words(now time.Time) string {
	if j == nil {
		return ""
	}
	id := j.ID
	if id == "" {
		id = "(not yet submitted)"
	}
	s := "Slurm job " + id
	if j.State != "" {
		s += " " + j.State
	}
	if j.Queued() {
		if j.Reason != "" {
			s += " (" + j.Reason + ")"
		}
		if !j.Submitted.IsZero() {
			s += " · queued " + format.Duration(now.Sub(j.Submitted))
		}
		if !j.StartsAt.IsZero() {
			s += " · starts ~" + j.StartsAt.Format("15:04") + " (Slurm)"
		}
		return s + j.lossWords()
	}
	if j.Nodes != "" {
		s += " on " + j.Nodes
	}
	if j.Reason != "" && words.State(j.State).Terminal() {
		s += " (" + j.Reason + ")"
	}
	if !j.Started.IsZero() {
		s += " · queued " + format.Duration(j.QueueWait)
	}
	return s + j.lossWords()
}

// lossWords says the nodes that failed under the job and its requeues:
// " · node n4 failed (Not responding) · requeued once".
func (j *SlurmJob) lossWords() string {
	s := ""
	switch len(j.Failed) {
	case 0:
	case 1:
		s += " · node " + j.Failed[0] + " failed"
	default:
		s += " · nodes " + strings.Join(j.Failed, ", ") + " failed"
	}
	switch {
	case j.Restarts == 1:
		s += " · requeued once by Slurm"
	case j.Restarts > 1:
		s += fmt.Sprintf(" · requeued %d times by Slurm", j.Restarts)
	}
	return s
}

// thisHost is this machine's short host name, read once: snapshots ask
// for every event.
var thisHost = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	return host
})
