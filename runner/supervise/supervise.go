package supervise

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"golang.org/x/sys/unix"
)

// Command is the hidden subcommand that runs one step.
const Command = "__supervise"

// Binary is the supervisor's own binary (cmd/greenlight-supervise), which
// runs a step as `greenlight __supervise` does.
const Binary = "greenlight-supervise"

// isSupervisor says a process's command line (NUL-separated) is a
// supervisor's: greenlight's subcommand, or the supervisor's own binary.
func isSupervisor(cmdline []byte) bool {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 {
		return false
	}
	return filepath.Base(args[0]) == Binary || len(args) > 1 && args[1] == Command
}

// Status is what the supervisor writes, atomically, to a step's status
// file: once when the command starts and once when it has ended.
// StateEnded is a status whose command has ended (its exit status
// known) while its supervisor still stops what the command left running;
// "exited" follows once that is done.
const StateEnded = "ended"

// CommandEnded says the step's command ended: its exit status is known,
// whether or not its supervisor finished stopping what it left.
func (s *Status) CommandEnded() bool { return s.State == "exited" || s.State == StateEnded }

type Status struct {
	State      string    `json:"state"` // "running", "ended" (StateEnded) or "exited"
	Supervisor int       `json:"supervisor_pid"`
	PID        int       `json:"pid"`
	PGID       int       `json:"pgid"`
	SID        int       `json:"sid"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended,omitzero"`
	ExitCode   int       `json:"exit_code"`
	Signal     string    `json:"signal,omitempty"`
	TimedOut   bool      `json:"timed_out,omitempty"`
	Error      string    `json:"error,omitempty"` // the command could not start
	// EndFromShell: the end was read from the step's own shell
	// (StepShell), its supervisor having died before it wrote it. Never
	// written to a status file.
	EndFromShell bool `json:"-"`
	// Lost: not the supervisor's word but the runner's, when the
	// supervisor died before writing its end: the step's outcome is
	// unknown. Never written to a status file.
	Lost bool `json:"-"`
	// PausesClock: this supervisor takes SIGUSR1 (the step was frozen: stop
	// the timeout clock) and SIGUSR2 (thawed: run it again). Supervisors
	// without it die of SIGUSR1, so the monitor sends it only when set.
	PausesClock bool `json:"pauses_clock,omitempty"`
	// Left are the processes of the step's tree still running when its
	// command ended ("pid 1480 python3"), which the supervisor then
	// stopped: a setsid'd helper, a daemon, a worker that outlived it.
	Left []string `json:"left,omitempty"`
	// Kept are those of Left a step with leave_running: true keeps: not
	// stopped with it; the campaign's runner stops them when the campaign
	// ends (StopKept).
	Kept []Kept `json:"kept,omitempty"`
	// LeftPIDs are Left's pids, in its order.
	LeftPIDs []int `json:"left_pids,omitempty"`
	// CPU is the CPU time the step's tree used (user and system) and
	// PeakMem its peak memory: its cgroup's (PeakOf "cgroup": the whole
	// tree at once) where it ran in one, else that of the one largest
	// process the supervisor waited for (PeakOf "process"). 0 when unknown.
	CPU     time.Duration `json:"cpu_ns,omitempty"`
	PeakMem uint64        `json:"peak_mem,omitempty"`
	PeakOf  string        `json:"peak_of,omitempty"`
	// Cgroup is the step's cgroup, where it ran in one.
	Cgroup string `json:"cgroup,omitempty"`
}

// maxLeft is how many left processes a status names (a fork storm can
// leave hundreds; the status file has a fixed size).
const maxLeft = 16

// Kept is a process a step left running on purpose, known by its pid and
// its start time, so that a pid used again by another process is never
// taken for it.
type Kept struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // clock ticks after boot, /proc/PID/stat's starttime
	Name  string `json:"name,omitempty"`
}

// Main runs a step's command with its output going to the log
// file, records its status, and enforces its timeout even when no monitor
// is watching. It returns the process exit code. args follow the
// subcommand name.
func Main(args []string) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	statusPath := fs.String("status", "", "status file")
	logPath := fs.String("log", "", "log file")
	dir := fs.String("dir", "", "working folder")
	timeout := fs.Duration("timeout", 0, "stop the command after this long")
	grace := fs.Duration("grace", 10*time.Second, "wait between stop signals")
	leave := fs.Bool("leave-running", false, "keep what the step leaves running (leave_running: true)")
	cgroupDir := fs.String("cgroup", "", "run the step in this cgroup (v2), made in its campaign's")
	prewarmDir := fs.String("prewarm", "", "read this folder into the page cache before the command starts")
	if err := fs.Parse(args); err != nil || *statusPath == "" || *logPath == "" || fs.NArg() == 0 && *prewarmDir == "" {
		fmt.Fprintln(os.Stderr, "greenlight: __supervise is internal: it runs one step for greenlight run")
		return 2
	}
	logf, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		// The runner started us with the same log open on stdout: use that
		// (the state dir may have been removed under us; it is rebuilt).
		if fi, serr := os.Stdout.Stat(); serr != nil || !fi.Mode().IsRegular() {
			WriteStatus(*statusPath, &Status{State: "exited", ExitCode: 127, Error: err.Error(), Started: time.Now(), Ended: time.Now()})
			return 1
		}
		logf = os.Stdout
	}
	defer logf.Close()
	// The supervisor itself must outlive a lost terminal and pass stop
	// requests on to the command's group rather than die and lose the status.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	// A child subreaper: whatever the step starts and orphans (setsid, a
	// double fork, a parent that exits) becomes this supervisor's child,
	// not init's, so the whole tree is found, stopped and reaped here.
	subreaper := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
	stopReq := make(chan os.Signal, 1)
	signal.Notify(stopReq, syscall.SIGINT, syscall.SIGTERM)
	freezeReq := make(chan os.Signal, 4)
	signal.Notify(freezeReq, syscall.SIGUSR1, syscall.SIGUSR2)

	st := &Status{State: "running", Supervisor: os.Getpid(), Started: time.Now(), PausesClock: true}
	st.SID = os.Getpid() // started with Setsid: the supervisor leads its session
	var cg *stepCgroup
	if job := os.Getenv("SLURM_JOB_ID"); job != "" {
		// Slurm's job cgroup holds the tree already, and Slurm ends it
		// with the job: a cgroup here is neither allowed nor needed.
		fmt.Fprintf(logf, "greenlight: in Slurm job %s: its cgroup holds the step's processes; Slurm ends them with the job\n", job)
	} else if *cgroupDir != "" {
		var err error
		if cg, err = newStepCgroup(filepath.Dir(*cgroupDir), filepath.Base(*cgroupDir)); err != nil {
			fmt.Fprintf(logf, "greenlight: cannot make the step's cgroup (%v): its tree is followed as the supervisor's descendants\n", err)
		}
	}
	if *prewarmDir != "" && prewarm(*prewarmDir, logf, stopReq, filepath.Join(filepath.Dir(*statusPath), PrewarmFile)) {
		cg.remove()
		st.State, st.ExitCode, st.Signal, st.Error, st.Ended = "exited", 143, "SIGTERM", "stopped during the prewarm", time.Now()
		WriteStatus(*statusPath, st)
		return 1
	}
	if fs.NArg() == 0 { // a prewarm alone, before its service's phase starts
		cg.remove()
		st.State, st.Ended = "exited", time.Now()
		WriteStatus(*statusPath, st)
		return 0
	}
	cmd := command(fs.Args(), *dir, logf, cg)
	err = cmd.Start()
	if err != nil && cg != nil {
		// No clone3 into a cgroup here (an old kernel, a seccomp filter):
		// started as before, and moved in at once.
		cmd = command(fs.Args(), *dir, logf, nil)
		if err = cmd.Start(); err == nil && cg.add(cmd.Process.Pid) != nil {
			cg.remove()
			cg = nil
		}
	}
	if cg != nil {
		st.Cgroup = cg.dir
	}
	if err != nil {
		fmt.Fprintf(logf, "greenlight: cannot start the step: %v\n", err)
		st.State, st.ExitCode, st.Error, st.Ended = "exited", 127, err.Error(), time.Now()
		WriteStatus(*statusPath, st)
		return 1
	}
	st.PID, st.PGID = cmd.Process.Pid, cmd.Process.Pid
	steptree := tree{pgid: st.PGID, cg: cg}
	// Not fsynced: an fsync here, while the step starts writing, can make
	// the filesystem flush the step's own output and slow it. The runner
	// already journaled the supervisor's pid; the final status is fsynced.
	if err := WriteStatusNoSync(*statusPath, st); err != nil {
		fmt.Fprintf(logf, "greenlight: cannot write status: %v\n", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// The timeout counts the time the step could run: a freeze stops the
	// clock, a thaw starts it again with what was left.
	var timer <-chan time.Time
	var clock *time.Timer
	left, since := *timeout, time.Now()
	if *timeout > 0 {
		clock = time.NewTimer(left)
		timer = clock.C
	}
	var werr error
	stopping, asked := false, false
	for done := false; !done; {
		select {
		case werr = <-waited:
			done = true
		case s := <-freezeReq:
			if clock == nil {
				continue
			}
			switch {
			case s == syscall.SIGUSR1 && timer != nil:
				clock.Stop()
				left, timer = max(0, left-time.Since(since)), nil
				fmt.Fprintf(logf, "\ngreenlight: step frozen; its timeout clock is stopped with %s left\n", format.Duration(left))
			case s == syscall.SIGUSR2 && timer == nil && !st.TimedOut:
				clock.Reset(left)
				since, timer = time.Now(), clock.C
				fmt.Fprintf(logf, "\ngreenlight: step thawed; %s left before its timeout\n", format.Duration(left))
			}
		case <-timer:
			st.TimedOut, timer = true, nil
			fmt.Fprintf(logf, "\ngreenlight: step timed out after %s; stopping it\n", format.Duration(*timeout))
			if !stopping {
				stopping = true
				go steptree.stop(*grace, true)
			}
		case s := <-stopReq:
			fmt.Fprintf(logf, "\ngreenlight: supervisor got %v; stopping the step\n", s)
			asked = true
			if !stopping {
				stopping = true
				go steptree.stop(*grace, true)
			}
		}
	}
	st.State, st.Ended = "exited", time.Now()
	st.ExitCode = 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		st.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st.Signal = ws.Signal().String()
			st.ExitCode = 128 + int(ws.Signal())
		}
	} else if werr != nil {
		st.ExitCode, st.Error = 1, werr.Error()
	}
	// The command's end is known now: said at once, before what it left is
	// stopped (that can take a while), so a supervisor killed meanwhile
	// leaves a step whose outcome is known, not one to run again.
	st.State = StateEnded
	if err := WriteStatus(*statusPath, st); err != nil {
		fmt.Fprintf(logf, "greenlight: cannot write status: %v\n", err)
	}
	st.State = "exited"
	// What the command left behind, in its group or anywhere in its tree,
	// would hold GPUs and ports into the next phase: it is stopped, and
	// named in the status.
	leftover := steptree.live()
	for i, pid := range leftover {
		if i == maxLeft {
			st.Left = append(st.Left, fmt.Sprintf("and %d more", len(leftover)-maxLeft))
			break
		}
		st.Left = append(st.Left, fmt.Sprintf("pid %d %s", pid, procName(pid)))
		st.LeftPIDs = append(st.LeftPIDs, pid)
	}
	if len(leftover) > 0 && *leave {
		for _, pid := range st.LeftPIDs {
			st.Kept = append(st.Kept, Kept{PID: pid, Start: procStart(pid), Name: procName(pid)})
		}
		fmt.Fprintf(logf, "greenlight: the step left %d process(es) running (%s); kept (leave_running: true) until the campaign ends\n", len(leftover), strings.Join(st.Left, ", "))
	} else if len(leftover) > 0 {
		fmt.Fprintf(logf, "greenlight: the step left %d process(es) running (%s); stopping them\n", len(leftover), strings.Join(st.Left, ", "))
		steptree.stop(*grace, false)
		// A process holding a GPU takes a while to let go of it after its
		// last signal (its CUDA context torn down, thread by thread): the
		// step ends, and the next phase starts, once each is gone for good.
		if !waitGone(leftover, 30*time.Second) {
			fmt.Fprintf(logf, "greenlight: some of them were still exiting after 30s\n")
		}
	}
	if !subreaper {
		fmt.Fprintf(logf, "greenlight: could not become a child subreaper: processes the step orphaned were not followed\n")
	}
	reapOrphans()
	st.CPU, st.PeakMem, st.PeakOf = usage(cg)
	if !*leave || len(leftover) == 0 {
		cg.remove()
	} else if cg != nil {
		unix.Close(cg.fd) // kept processes live in it: the runner removes it at the end
	}
	if err := WriteStatus(*statusPath, st); err != nil {
		fmt.Fprintf(logf, "greenlight: cannot write status: %v\n", err)
	}
	// A Slurm job's batch script stopped as asked (greenlight's stop of a
	// service it no longer needs, a skip) ended as it should: Slurm would
	// otherwise call the job FAILED, and the record would say a service
	// that served its phases failed. The status file keeps the step's own
	// end; Slurm's own ends (TIMEOUT, CANCELLED, NODE_FAIL) are its state,
	// whatever this exit code.
	if asked && os.Getenv("SLURM_JOB_ID") != "" {
		return 0
	}
	// The step's own exit status: the runner that started this supervisor
	// reads it from the wait status when the status file could not be
	// written (a full disk, the state dir removed).
	return min(st.ExitCode, 255)
}

// command is the step's command, started in its own group, and in cg
// when there is one.
func command(args []string, dir string, logf *os.File, cg *stepCgroup) *exec.Cmd {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cg.fd
	}
	return cmd
}

// usage is the step's CPU time and peak memory: its cgroup's when it has
// one, else those of the processes this supervisor waited for (all of
// the tree it reaped: it is their subreaper), whose peak is the largest
// one process's.
func usage(cg *stepCgroup) (cpu time.Duration, peak uint64, of string) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) == nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		peak, of = uint64(ru.Maxrss)*1024, "process"
	}
	if cg != nil {
		c, p := cg.usage()
		if c > 0 {
			cpu = c
		}
		if p > 0 {
			peak, of = p, "cgroup"
		}
	}
	return cpu, peak, of
}

// StopGroup asks a process group to end: SIGINT, then SIGTERM, then SIGKILL,
// waiting grace between each. A frozen group is thawed so it can obey.
func StopGroup(pgid int, grace time.Duration) {
	if pgid <= 1 {
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		if syscall.Kill(-pgid, sig) != nil {
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGCONT)
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) {
			if !GroupAlive(pgid) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// GroupAlive reports whether any live (not zombie) process is in the group.
func GroupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	// kill(2) also reaches zombies; look for a live member in /proc.
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		pid := 0
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		state, pg, ok := ProcStat(pid)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// ProcStat reads a process's state letter and process group from /proc.
func ProcStat(pid int) (state byte, pgid int, ok bool) {
	state, _, pgid, ok = procStat(pid)
	return state, pgid, ok
}

// Alive reports whether pid is still a greenlight supervisor
// writing the given status file, not a recycled pid.
func Alive(pid int, statusPath string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	if st, _, ok := ProcStat(pid); !ok || st == 'Z' {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return isSupervisor(b) && strings.Contains(string(b), "\x00"+statusPath+"\x00")
}

// Find is the live supervisor of the step whose status file is
// statusPath, found by its command line; 0 when none runs. A runner
// killed between journaling a step's start and its supervisor's pid
// finds the supervisor it had started this way, and never starts the
// step a second time.
func Find(statusPath string) int {
	want := "\x00--status\x00" + statusPath + "\x00"
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), want) || !isSupervisor(b) {
			continue
		}
		if Alive(pid, statusPath) {
			return pid
		}
	}
	return 0
}
