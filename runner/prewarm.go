package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// A service with `prewarm: true` has its model's folder read into the
// page cache before its phase takes its GPUs: the read runs while the
// phase waits (for GPUs another phase holds, or for nothing), in a
// supervisor of its own, detached like a step's, so a runner killed
// meanwhile finds it again. The phase starts once the read has ended (done,
// skipped as already warm, or refused for want of memory: the service
// starts either way). Its folder, steps/PHASE/prewarm-aN, keeps its log
// and what it did (prewarm.json) for the Load table.

// prewarmRun is one attempt's prewarm.
type prewarmRun struct {
	dir     string
	status  string
	sup     int
	logOff  int64
	prog    progressTrack
	started time.Time
	ended   bool
}

// wantsPrewarm says a phase reads its model in before it starts: a
// local service asking for it, its gate open.
func (r *Runner) wantsPrewarm(pr *phaseRun) bool {
	svc := pr.ph.Service
	if svc == nil || !svc.Prewarm || svc.Model == "" || pr.ph.Slurm != nil {
		return false // a Slurm service reads it on its node, in its job
	}
	return !pr.ph.Manual || pr.gateOpen || r.approved(pr.ph.ID)
}

// prewarming starts, or follows, the prewarm of a phase about to start;
// true while the phase must wait for it.
func (r *Runner) prewarming(pr *phaseRun, now time.Time) bool {
	if !r.wantsPrewarm(pr) {
		return false
	}
	w := pr.warm
	if w == nil {
		w = &prewarmRun{dir: r.prewarmDir(pr.ph.ID, max(pr.state.Attempt+1, 1)), started: now}
		w.status = filepath.Join(w.dir, "status.json")
		pr.warm = w
		if st, err := supervise.ReadStatus(w.status); err == nil && st.State == "exited" {
			w.ended = true // read in by a runner before this one
		} else if pid := supervise.Find(w.status); pid > 0 {
			w.sup = pid // started by a runner before this one: followed
		} else if err := r.startPrewarm(pr, w); err != nil {
			r.warn(fmt.Sprintf("%s: cannot start its prewarm (%v): the service starts without it", pr.ph.Label(), err))
			w.ended = true
		}
	}
	if w.ended {
		return false
	}
	w.follow(now)
	if st, err := supervise.ReadStatus(w.status); err == nil && st.State == "exited" || !supervise.Alive(w.sup, w.status) {
		w.follow(now) // its last lines
		w.ended = true
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Message: pr.ph.Label() + ": " + w.lastWords()})
		return false
	}
	return true
}

// prewarmDir is the folder of a phase's attempt's prewarm: the runner
// that started it and one that takes the attempt over read it alike.
func (r *Runner) prewarmDir(phase string, attempt int) string {
	return filepath.Join(r.dirs.Steps(), phase, fmt.Sprintf("prewarm-a%d", attempt))
}

// startPrewarm starts the prewarm's supervisor, detached.
func (r *Runner) startPrewarm(pr *phaseRun, w *prewarmRun) error {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	if err := supervise.Preallocate(w.status); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(w.dir, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append(append([]string(nil), r.opts.Self[1:]...), "--status", w.status, "--log", logf.Name(),
		"--dir", w.dir, "--prewarm", pr.ph.Service.Model, "--")
	cmd := exec.Command(r.opts.Self[0], args...)
	cmd.Env = append(os.Environ(), supervise.EnvState+"="+r.dirs.Root(), "GREENLIGHT_PHASE="+pr.ph.ID)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.sup = cmd.Process.Pid
	go cmd.Wait() // reaped; its end is read from its status file
	r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Message: fmt.Sprintf("%s: reading its model %s into the page cache before it takes its GPUs", pr.ph.Label(), pr.ph.Service.Model)})
	return nil
}

// follow reads the prewarm's new progress lines ("12.3/40.0 GB read").
func (w *prewarmRun) follow(now time.Time) {
	f, err := os.Open(filepath.Join(w.dir, "log"))
	if err != nil {
		return
	}
	defer f.Close()
	f.Seek(w.logOff, io.SeekStart)
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		return
	}
	w.logOff += int64(end + 1)
	for line := range bytes.Lines(b[:end+1]) {
		rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte(supervise.PrewarmLine))
		if !ok {
			continue
		}
		if i := bytes.Index(rest, []byte(" GB read")); i > 0 {
			if a, c, ok := bytes.Cut(rest[:i], []byte("/")); ok {
				d, e1 := strconv.ParseFloat(string(a), 64)
				t, e2 := strconv.ParseFloat(string(c), 64)
				if e1 == nil && e2 == nil && t > 0 {
					w.prog.unit = "GB"
					w.prog.observe(now, d, t)
				}
			}
		}
	}
}

// lastWords is the prewarm's last line: what it did.
func (w *prewarmRun) lastWords() string {
	b, _ := os.ReadFile(filepath.Join(w.dir, "log"))
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if rest, ok := bytes.CutPrefix(lines[i], []byte(supervise.PrewarmLine)); ok {
			return "prewarm: " + string(rest)
		}
	}
	return "prewarm ended"
}

// words say the prewarm under way, for the phase's wait reason:
// "prewarming its model (no GPU held): 3.1/8.6 GB, 1.9 GB/s, 3s left".
func (w *prewarmRun) words(now time.Time) string {
	s := "prewarming its model (no GPU held)"
	if !w.prog.seen {
		return s + ": started " + format.Duration(now.Sub(w.started)) + " ago"
	}
	s += fmt.Sprintf(": %s/%s GB", trimFloat(w.prog.done), trimFloat(w.prog.total))
	if rate := w.prog.rateText(); rate != "" {
		s += ", " + rate
	}
	if rem, ok := w.prog.remaining(now); ok {
		s += ", " + format.Duration(rem) + " left"
	}
	return s
}

// stopPrewarm stops a prewarm under way (a skip, a stop of the campaign).
func (pr *phaseRun) stopPrewarm() {
	if w := pr.warm; w != nil && !w.ended && supervise.Alive(w.sup, w.status) {
		syscall.Kill(w.sup, syscall.SIGTERM)
	}
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
