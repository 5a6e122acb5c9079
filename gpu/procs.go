package gpu

// Whose a process on a GPU is: the campaign's (in a session of its steps,
// or started by one of them, wherever it went since) or a stranger's;
// read from /proc, cached, and kept among the processes seen.

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"time"
)

// SetSessions names the session ids of the campaign's live steps;
// processes in them are the campaign's, others are foreign. Sessions are
// remembered after their step ends: a process of an ended step that is
// still on a GPU (or still listed by a driver that answers late) is the
// campaign's leftover, not a stranger.
func (s *Sampler) SetSessions(ids []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) > 4096 {
		clear(s.sessions)
	}
	for _, id := range ids {
		s.sessions[id] = true
	}
}

type procEntry struct {
	name      string
	sid, pgrp int
	phase     string // the campaign's phase that started it (SetOwner); "" when none
	ok        bool
	at        time.Time
}

// SetOwner gives the sampler a way to know a process the campaign
// started, wherever it now is (a setsid'd helper, a daemon adopted by
// init): owner says the phase whose step started it, "" for a process
// not of the campaign. It is asked once per process every ten seconds
// at most (a read of its /proc environment).
func (s *Sampler) SetOwner(owner func(pid int) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owner = owner
}

// proc reads a process's name, session and group from /proc, cached for
// ten seconds: they do not change, and /proc reads are the sampler's main
// cost.
func (s *Sampler) proc(pid int, now time.Time) procEntry {
	if e, hit := s.procs[pid]; hit && now.Sub(e.at) < 10*time.Second {
		return e
	}
	pi := procInfo(pid)
	if len(s.procs) > 4096 {
		clear(s.procs)
	}
	e := procEntry{name: pi.name, sid: pi.sid, pgrp: pi.pgrp, ok: pi.ok, at: now}
	if s.owner != nil && pi.ok {
		// Its own environment, else its nearest ancestor's that says: a
		// process tearing down its CUDA context has lost its environment
		// but not its parent (the step's supervisor, its subreaper).
		for p, hops := pid, 0; p > 1 && hops < 16 && e.phase == ""; p, hops = procInfo(p).ppid, hops+1 {
			e.phase = s.owner(p)
		}
	}
	s.procs[pid] = e
	return e
}

// label says of each process on the sample's device whose it is, and
// keeps it among those seen. Called with s.mu held.
func (s *Sampler) label(sm *Sample, now time.Time) {
	for j := range sm.Procs {
		p := &sm.Procs[j]
		e := s.proc(p.PID, now)
		if p.Name == "" {
			p.Name = e.name
		}
		// The campaign's: in the session of a supervisor it started, or
		// in a step's process group (a step run by Slurm's slurmd on
		// this machine is in Slurm's session, not the supervisor's), or
		// started by one of its steps (SetOwner). A mirror (a client of
		// the runner) brings the runner's word on it.
		p.Campaign = p.Campaign || e.ok && (s.sessions[e.sid] || s.sessions[e.pgrp]) || s.sessions[p.PID] || e.phase != ""
		p.Phase = cmp.Or(p.Phase, e.phase)
		key := procKey{sm.Device.ID(), p.PID}
		if sn := s.seen[key]; sn != nil {
			// Once the campaign's, always: a pid that outlives its
			// /proc entry for a round is not a new process.
			p.Campaign = p.Campaign || sn.Proc.Campaign
			p.Phase = cmp.Or(p.Phase, sn.Proc.Phase)
			sn.Last, sn.Proc, sn.Peak = now, *p, max(sn.Peak, p.MemUsed)
		} else if len(s.seen) < 4096 {
			s.seen[key] = &Seen{Device: sm.Device.ID(), First: now, Last: now, Proc: *p, Peak: p.MemUsed}
		}
	}
}

// procStat is a process as /proc says: its name, parent, group and session.
// ok is false when the pid is not visible here (another pid namespace: a
// container).
type procStat struct {
	name            string
	ppid, pgrp, sid int
	ok              bool
}

func procInfo(pid int) procStat {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open || close+2 >= len(s) {
		return procStat{}
	}
	st := procStat{name: s[open+1 : close], ok: true}
	var state byte
	if _, err := fmt.Sscanf(s[close+2:], "%c %d %d %d", &state, &st.ppid, &st.pgrp, &st.sid); err != nil {
		st.ppid, st.pgrp, st.sid = 0, 0, 0
	}
	return st
}
