package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// record is one line of the journal: a transition, fsynced before anyone
// hears of it.
type record struct {
	T        time.Time        `json:"t"`
	Kind     string           `json:"kind"`
	Phase    string           `json:"phase,omitempty"`
	Step     int              `json:"step,omitempty"`
	Attempt  int              `json:"attempt,omitempty"`
	Hash     string           `json:"hash,omitempty"`
	UnitHash string           `json:"unit_hash,omitempty"` // at a sweep phase's start: one unit's work (campaign.Phase.UnitHash)
	Unit     string           `json:"unit,omitempty"`      // at a sweep step's start: its unit's identity (campaign.Sweep.Identity)
	Status   Status           `json:"status,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Skip     state.SkipBy     `json:"skip,omitempty"` // a step skipped by a decision: why, typed (Reason says it in words)
	Dir      string           `json:"dir,omitempty"`
	ExitCode int              `json:"exit,omitempty"`
	PID      int              `json:"pid,omitempty"`   // the step's supervisor
	Job      string           `json:"job,omitempty"`   // the step's Slurm job id
	Slurm    *SlurmJob        `json:"slurm,omitempty"` // at a phase's end: Slurm's last word on its job
	Kept     []supervise.Kept `json:"kept,omitempty"`  // what a step with leave_running left running
	// Unstarted: at a phase's end, it ended (blocked, skipped, stopped)
	// without starting again since it was last made pending: what an
	// earlier attempt ran is not this end's.
	Unstarted bool `json:"unstarted,omitempty"`
	// Claims: the files a step claimed as its artifacts (claims.go).
	Claims []Claim `json:"claims,omitempty"`
	// Facts: a step's, at its end (facts.go).
	Facts *StepFacts `json:"facts,omitempty"`
	// Counters: at a step's start, its GPUs' energy counters (facts.go).
	Counters *Counters `json:"counters,omitempty"`
}

// Journal record kinds.
const (
	recCampaign    = "campaign"
	recPhaseStart  = "phase-start"
	recPhaseEnd    = state.RecordPhaseEnd
	recStepStart   = "step-start"
	recStepPID     = "step-pid"
	recStepJob     = "step-job"
	recStepEnd     = "step-end"
	recReady       = "service-ready"
	recGate        = state.RecordGate
	recKept        = "kept"                // Kept: processes a step left running on purpose, stopped at the campaign's end
	recKeptStopped = "kept-stopped"        // the campaign's end stopped them
	recPointSkip   = state.RecordPointSkip // Reason: the points skipped (a point spec); Attempt: the phase's attempt when said; holds until a retry
	recRetry       = state.RecordRetry     // the phase runs again from scratch: its points skipped run again
	recLetGo       = state.RecordLetGo     // a failed phase will not run again: no service is kept up for it (skip of a failed phase)
	recAdopted     = "adopted"             // a runner started again took over a step of the attempt
	recNote        = "note"                // Reason: a person's note (greenlight note), for the record
	recWarning     = "warning"             // Reason: a warning the runner said, as the record says it
	recFacts       = "facts"               // Facts: what the monitor saw of a step's run, and its stamp (facts.go)
	recStamp       = "stamp"               // Reason: a stamp alone, as journals before facts have it (read back as facts)
	recFinished    = "campaign-end"
	recClaim       = "claim" // Claims: files the step in Dir made (Step -1: said to be no step's)
)

// skipBy is a step end's typed skip. A journal written before skips were
// typed has only its words: the one skip journaled with a step's end is
// a point skipped by you, whose words begin whyByYou.
func (rec record) skipBy() state.SkipBy {
	if rec.Skip == "" && rec.Status == Skipped && strings.HasPrefix(rec.Reason, whyByYou) {
		return state.SkipByYou
	}
	return rec.Skip
}

// factsOf are the facts a facts record (or an older journal's stamp)
// holds.
func (rec record) factsOf() *StepFacts {
	if rec.Kind == recStamp {
		return &StepFacts{Stamp: []string{rec.Reason}}
	}
	return rec.Facts
}

type journal struct {
	mu       sync.Mutex
	f        *os.File
	end      int64 // bytes written
	reserved int64 // blocks allocated up to here, beyond the end
}

// journalReserve is room kept allocated past the journal's end, so that
// the records of a step that filled the disk (its end, its phase's end)
// can still be written: some hundred thousand records' worth.
const journalReserve = 1 << 20

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &journal{f: f}
	if fi, err := f.Stat(); err == nil {
		j.end = fi.Size()
	}
	j.reserve()
	return j, nil
}

// reserve allocates journalReserve bytes past the end without changing the
// file's size. Best effort: a filesystem without fallocate goes without.
func (j *journal) reserve() {
	if unix.Fallocate(int(j.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, j.end, journalReserve) == nil {
		j.reserved = j.end + journalReserve
	}
}

// write appends r as one line, fsynced when sync is set. A torn append (a
// full disk without reserve) is cut back, so the journal stays whole.
func (j *journal) write(r record, sync bool) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if n, err := j.f.Write(append(b, '\n')); err != nil {
		if n > 0 {
			j.f.Truncate(j.end)
		}
		return fmt.Errorf("journal: %w", err)
	}
	j.end += int64(len(b) + 1)
	if j.reserved-j.end < journalReserve/2 {
		j.reserve()
	}
	if !sync {
		return nil
	}
	return j.f.Sync()
}

func (j *journal) close() error { return j.f.Close() }

// readJournal returns the records in order. A torn last line (a crash mid
// write) is ignored; a bad line elsewhere is an error.
func readJournal(path string) ([]record, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	var bad error
	n := 0
	for sc.Scan() {
		n++
		if bad != nil {
			return nil, bad
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			bad = fmt.Errorf("journal %s line %d: %w", path, n, err)
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
