package supervise

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The step's whole process tree: what it is (the supervisor's descendants,
// which come to it as their subreaper, and the step's group), how it is
// stopped, and how its ended members are reaped.

// Tree is the live processes of the step: this supervisor's descendants
// (orphans come to it: it is their subreaper) and the members of the
// step's group, pgid, wherever they are. Zombies are not counted.
func Tree(pgid int) []int { return tree{pgid: pgid}.live() }

// tree is a step's processes: its group, the supervisor's descendants and,
// where the step has one, its cgroup's members.
type tree struct {
	pgid int
	cg   *stepCgroup
}

func (t tree) live() []int {
	pgid := t.pgid
	self := os.Getpid()
	parent := map[int]int{}
	group := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		state, ppid, pg, ok := procStat(pid)
		if !ok || (state == 'Z' || state == 'X') && !threadsLive(pid) {
			continue
		}
		parent[pid] = ppid
		if pgid > 1 && pg == pgid {
			group[pid] = true
		}
	}
	var out []int
	for pid := range parent {
		in := group[pid]
		for p, hops := parent[pid], 0; !in && p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			in = p == self
		}
		if !in && parent[pid] == self {
			in = true
		}
		if in {
			out = append(out, pid)
		}
	}
	for _, pid := range t.cg.procs() {
		if _, ok := parent[pid]; ok && !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// StopTree asks every process of the step's tree (Tree) to end: its
// group SIGINT (as Ctrl-C would: a server shuts down cleanly) and the rest
// of the tree SIGTERM, then all SIGTERM, then SIGKILL, grace apart, found
// again at each look (a fork storm's new children too). A frozen process
// is thawed so it can obey.
func StopTree(pgid int, grace time.Duration) { tree{pgid: pgid}.stop(grace, true) }

// stop is StopTree for the tree; its SIGKILL goes through its cgroup's
// cgroup.kill too, which no fork outruns. Without interrupt (what a step
// left running once its command ended: background jobs, which ignore
// SIGINT) it starts at SIGTERM for all.
func (t tree) stop(grace time.Duration, interrupt bool) {
	pgid := t.pgid
	stages := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL}
	if !interrupt {
		stages = stages[1:]
	}
	for _, sig := range stages {
		send := func() int {
			if sig == syscall.SIGKILL {
				t.cg.kill()
			}
			tree := t.live()
			if pgid > 1 {
				syscall.Kill(-pgid, sig)
				syscall.Kill(-pgid, syscall.SIGCONT)
			}
			for _, pid := range tree {
				s := sig
				if _, _, pg, ok := procStat(pid); sig == syscall.SIGINT && ok && pg != pgid {
					s = syscall.SIGTERM // not the foreground job: an interrupt is not for it
				}
				syscall.Kill(pid, s)
				syscall.Kill(pid, syscall.SIGCONT)
			}
			return len(tree)
		}
		if send() == 0 {
			return
		}
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) {
			if len(t.live()) == 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
			if sig == syscall.SIGKILL {
				send() // children forked since the last look
			}
		}
	}
}

// reapOrphans waits for the orphans that came to this supervisor and
// have ended, so they do not linger as zombies. It is called only once
// the step's own command has been waited for (a wait for any child
// before that could take the command's own exit status).
func reapOrphans() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// threadsLive says a process whose leader has exited still has threads
// running (a multi-threaded process dying: its leader shows Z first).
func threadsLive(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X' {
			return true
		}
	}
	return false
}

// waitGone reaps the orphans that end and waits, up to limit, until none
// of pids is left in /proc (a child of another parent is gone once it is
// a zombie with no live thread). Called once the step's command has been
// waited for.
func waitGone(pids []int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		reapOrphans()
		left := 0
		for _, pid := range pids {
			state, ppid, _, ok := procStat(pid)
			switch {
			case !ok:
			case (state == 'Z' || state == 'X') && ppid != os.Getpid() && !threadsLive(pid):
			default:
				left++
			}
		}
		if left == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procName is a process's command name, for the record.
func procName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// procStat reads a process's state letter, parent and group from /proc.
func procStat(pid int) (state byte, ppid, pgid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, 0, false
	}
	if _, err := fmt.Sscanf(s[i+2:], "%c %d %d", &state, &ppid, &pgid); err != nil {
		return 0, 0, 0, false
	}
	return state, ppid, pgid, true
}

// procStart is a process's start time (clock ticks after boot); 0 when it
// cannot be read.
func procStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// keptAlive says a kept process still runs: the same pid, started at the
// same tick, not a zombie.
func keptAlive(k Kept) bool {
	state, _, _, ok := procStat(k.PID)
	return ok && state != 'Z' && state != 'X' && procStart(k.PID) == k.Start
}

// StopKept stops the processes steps kept running (leave_running), at the
// campaign's end: SIGINT, SIGTERM, then SIGKILL, grace apart, each only to
// a process that is still the one kept. It returns those it signalled.
func StopKept(kept []Kept, grace time.Duration) []Kept {
	var live []Kept
	for _, k := range kept {
		if keptAlive(k) {
			live = append(live, k)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		left := 0
		for _, k := range live {
			if keptAlive(k) {
				syscall.Kill(k.PID, sig)
				syscall.Kill(k.PID, syscall.SIGCONT)
				left++
			}
		}
		if left == 0 {
			break
		}
		for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !slices.ContainsFunc(live, keptAlive) {
				return live
			}
		}
	}
	return live
}
