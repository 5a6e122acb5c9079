package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// stepRun follows one try of one step: its files, its process group, and
// how far its log and results have been read.
type stepRun struct {
	r       *Runner // the loop it reports to: events, journal, the other phases
	pr      *phaseRun
	step    *campaign.Step
	try     int
	dir     string
	files   stepFiles
	started time.Time
	adopted bool // found running after a restart

	proc       stepProc // the process: its group, its supervisor, how it ends
	diskFilled bool     // free space fell under the guard's limit while it ran
	rec        recordedTimes

	// What it says: how far its files have been read, and what they told.
	out         outputRead
	vllm        vllmBench // the result block being read, for format: vllm-bench
	nccl        ncclTests // the table being read, for format: nccl-tests
	prog        progressTrack
	stage       int               // index into the service's stages, -1 before the first
	stageStarts []time.Time       // when each stage reached began; [0] is the start
	stagesKept  map[int]time.Time // the stages an earlier runner saw reached (stagesFile), for one taking the load over
	replaying   bool              // its log is read again by a runner taking it over: a stage seen now was reached earlier
	readyLog    bool

	health healthCheck // a service's readiness and health probe
	load   *loadWatch  // a service's model load, when it names its model
	shown  shownMark   // what the last Progress event showed
	quiet  quietWatch  // wait_quiet: its artifacts' growth after its command exited

	where backend   // where it runs: here, or as a Slurm job (see on)
	job   *slurmJob // the Slurm backend's record of its job
}

// on is the step's backend, made on first use from its phase's settings.
func (sr *stepRun) on() backend {
	if sr.where == nil {
		sr.where = newBackend(sr)
	}
	return sr.where
}

type stepFiles struct{ log, status, results, summary string }

// stepExit is a supervisor this runner started having exited, with its
// exit code (the step's, see SuperviseMain), or -1 if it was killed.
type stepExit struct {
	sr   *stepRun
	code int
}

// filesIn names a step's files. The log sits beside the folder, not in it:
// the runner watches the folder for results, summary and status, and a
// step flooding its log must not wake the monitor on every write.
func filesIn(dir string) stepFiles {
	return stepFiles{log: dir + ".log", status: filepath.Join(dir, "status.json"),
		results: filepath.Join(dir, "results.jsonl"), summary: filepath.Join(dir, "summary.md")}
}

// newStepDir makes the folder of one try of a step. Its name is never
// reused, even when the journal that counted attempts is gone: a status
// file left by another try must never be read as this one's.
func newStepDir(dirs Layout, pr *phaseRun, step *campaign.Step, try int) (string, error) {
	parent := filepath.Join(dirs.Steps(), pr.ph.ID)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(parent, fmt.Sprintf("a%d-s%d-t%d", pr.state.Attempt, step.Index+1, try))
	dir := base
	for n := 2; ; n++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) || n > 10000 {
			return "", err
		}
		dir = fmt.Sprintf("%s-%d", base, n)
	}
}

// StepRunOf reads the name of a try's folder (a2-s3-t1, or a2-s3-t1-2
// where that name was taken): the phase's attempt, the step's number (1
// on the first) and its try; ok false for any other name.
func StepRunOf(name string) (attempt, step, try int, ok bool) {
	m := stepRunName.FindStringSubmatch(name)
	if m == nil {
		return 0, 0, 0, false
	}
	attempt, _ = strconv.Atoi(m[1])
	step, _ = strconv.Atoi(m[2])
	try, _ = strconv.Atoi(m[3])
	return attempt, step, try, true
}

var stepRunName = regexp.MustCompile(`^a([1-9][0-9]{0,8})-s([1-9][0-9]{0,8})-t([1-9][0-9]{0,8})(?:-(?:[2-9]|[1-9][0-9]{1,8}))?$`)

// launchStep starts one try of a step in dir, on its backend: its
// supervisor here, detached in a session of its own, or its Slurm job.
func launchStep(r *Runner, pr *phaseRun, step *campaign.Step, try int, dir string, now time.Time) (*stepRun, error) {
	if err := os.MkdirAll(pr.artDir, 0o755); err != nil {
		return nil, err
	}
	sr := &stepRun{r: r, pr: pr, step: step, try: try, dir: dir, files: filesIn(dir), started: now, stage: -1}
	for _, f := range []string{sr.files.results, sr.files.summary} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return nil, err
		}
	}
	if err := supervise.Preallocate(sr.files.status); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(sr.files.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	env := os.Environ()
	for k, v := range step.Env {
		env = append(env, k+"="+v)
	}
	env = append(env,
		"GREENLIGHT_RESULTS="+sr.files.results,
		"GREENLIGHT_EXIT="+supervise.ExitFile(sr.files.status),
		"GREENLIGHT_SUMMARY="+sr.files.summary,
		"GREENLIGHT_PHASE="+pr.ph.ID,
		supervise.EnvState+"="+r.dirs.Root(),
		"GREENLIGHT_STEP="+strconv.Itoa(step.Index+1),
		"GREENLIGHT_ARTIFACTS="+pr.artDir,
		"GREENLIGHT_CAMPAIGN="+r.plan.Name,
		"PYTHONUNBUFFERED=1",
	)
	env = append(env, r.serviceNodes(pr)...)
	timeout := step.Timeout
	if pr.ph.Timeout > 0 && (timeout == 0 || pr.ph.Timeout < timeout) {
		timeout = pr.ph.Timeout
	}
	if pr.ph.Service != nil {
		timeout = 0 // a service runs until it is no longer needed
	}
	args := append(append([]string(nil), r.opts.Self[1:]...),
		"--status", sr.files.status, "--log", sr.files.log, "--dir", step.Dir,
		"--timeout", timeout.String(), "--grace", r.opts.Grace.String())
	if step.LeaveRunning {
		args = append(args, "--leave-running")
	}
	if svc := pr.ph.Service; svc != nil && svc.Prewarm && svc.Model != "" && pr.ph.Slurm != nil {
		// On its node, in its job; a local service's was read in before
		// its phase took its GPUs (prewarm.go).
		args = append(args, "--prewarm", svc.Model)
	}
	if r.cgroup != "" && pr.ph.Slurm == nil {
		args = append(args, "--cgroup", sr.cgroupPlanned())
	}
	args = append(args, "--", "sh", "-c", supervise.StepShell, "sh", step.Run)
	if err := sr.on().launch(env, args, logf); err != nil {
		return nil, err
	}
	sr.watchLoad()
	return sr, nil
}

// reaped handles its supervisor, started by this runner, having exited
// with code.
func (sr *stepRun) reaped(code int) {
	if sr.pr.cur == sr && !sr.proc.exitedSeen {
		sr.proc.reaped, sr.proc.waitCode = true, code
		sr.follow(sr.r.opts.Now())
	}
}

// stop stops the step, grace apart between its signals (a service's
// stop_timeout instead of grace, here).
func (sr *stepRun) stop(grace time.Duration) { sr.on().stop(grace) }

// follow reads what a running step wrote since the last look, and handles
// its end.
func (sr *stepRun) follow(now time.Time) {
	r, pr := sr.r, sr.pr
	if sr.proc.exitedSeen {
		return
	}
	// Results go to disk within 100 ms, so they are read every poll; the
	// log (progress) and the status file every 250 ms are enough, and an
	// exit of a supervisor we started wakes us through reap at once.
	sr.readResults(now)
	sr.readSummary()
	// A freeze asked before the step's group was known waits for its status.
	frozenPending := sr.on().freezePending()
	sr.where.look(now)
	if now.Sub(sr.out.lastRead) < logEvery && !sr.proc.reaped && !frozenPending {
		return
	}
	sr.out.lastRead = now
	sr.readLog(now, false)
	if pr.ph.Service != nil {
		sr.checkService(now)
		sr.sayCache()
	}
	if sr.quiet.waiting {
		sr.checkQuiet(now)
		return
	}
	st, err := sr.readStatusIfChanged()
	if err != nil {
		st = nil
	}
	if st != nil {
		sr.proc.pausesClock = st.PausesClock
		pr.state.Steps[sr.step.Index].PGID = st.PGID
	}
	if end := sr.where.ended(st, now); end != nil {
		sr.readLog(now, true)
		sr.drainResults(now)
		sr.readSummary()
		sr.onExit(end, now)
		return
	}
	// A phase's timeout counts its run, not its time in a queue.
	ran := pr.ranFor(now)
	if waited, queued, _ := sr.where.queue(); queued {
		ran = 0
	} else {
		ran -= waited
	}
	if pr.ph.Timeout > 0 && pr.ph.Service == nil && ran > pr.ph.Timeout && sr.proc.stopFor == "" {
		sr.proc.stopFor, sr.proc.stopWhy = Failed, "phase timed out after "+format.Duration(pr.ph.Timeout)
		sr.stop(r.opts.Grace)
	}
	sr.updateETA(now)
}

// resumeBetweenSteps starts the next step of a phase that a pause or a
// restart left between two steps.
func (r *Runner) resumeBetweenSteps(now time.Time) {
	if r.q.paused || r.q.stopping {
		return
	}
	for _, pr := range r.phases {
		if pr.state.Status == Running && pr.cur == nil {
			if pr.ph.Sweep != nil && pr.ph.Sweep.Search != nil {
				// A search's next unit is the search's to say, again.
				if next := pr.nextStep(pr.state.Current); next < len(pr.ph.AllSteps()) {
					r.startStep(pr, next, max(1, pr.state.Steps[next].Attempt+1), now)
				} else {
					r.endPhase(pr, Done, "")
				}
				continue
			}
			// A unit whose try was cut (its supervisor gone at a restart)
			// runs as its next try, in a folder of its own.
			r.startStep(pr, pr.state.Current, max(1, pr.state.Steps[pr.state.Current].Attempt+1), now)
		}
	}
}

const (
	logEvery       = 250 * time.Millisecond
	maxReadPerPoll = 4 << 20
	tailWindow     = 64 << 10
)

// statKey tells whether a file changed since it was last read.
type statKey struct {
	size int64
	mod  time.Time
}

// readStatusIfChanged reads the status file only when it changed; nil, nil
// means unchanged.
func (sr *stepRun) readStatusIfChanged() (*supervise.Status, error) {
	fi, err := os.Stat(sr.files.status)
	if err != nil {
		return nil, err
	}
	k := statKey{fi.Size(), fi.ModTime()}
	if k == sr.proc.statusSeen {
		return nil, nil
	}
	st, err := supervise.ReadStatus(sr.files.status)
	if err == nil {
		sr.proc.statusSeen = k
	}
	return st, err
}
