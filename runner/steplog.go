package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Reading a step's log: lines split on \n and \r (tqdm redraws),
// progress, results by regex, and a service's stages.

// readLog splits new log bytes on \n and \r, so tqdm's redraws count as
// lines, and looks in each for progress, results, readiness and stages.
func (sr *stepRun) readLog(now time.Time, final bool) {
	// The log stays open while the step runs: reopening it four times a
	// second is most of an idle monitor's CPU.
	if sr.out.logFile == nil {
		f, err := os.Open(sr.files.log)
		if err != nil {
			return
		}
		sr.out.logFile = f
	}
	f := sr.out.logFile
	if final {
		defer func() { sr.out.logFile.Close(); sr.out.logFile = nil }()
	}
	fi, err := f.Stat()
	if err != nil {
		return
	}
	size := fi.Size()
	// Progress needs only the latest lines. Unless every line matters
	// (results regex, a service's readiness and stages), skip what a
	// flooding step wrote since the last look: the monitor must not compete
	// with the benchmark for CPU.
	if sr.step.Results == nil && sr.step.ResultsFormat == "" && sr.pr.ph.Service == nil && size-sr.out.logOff > tailWindow {
		sr.out.logOff, sr.out.logRest = size-tailWindow, nil
		sr.out.skipPartial = true
	}
	for size > sr.out.logOff {
		want := min(size-sr.out.logOff, maxReadPerPoll)
		if int64(cap(sr.out.buf)) < want {
			sr.out.buf = make([]byte, want)
		}
		buf := sr.out.buf[:want]
		n, _ := f.ReadAt(buf, sr.out.logOff)
		if n == 0 {
			break
		}
		sr.out.logOff += int64(n)
		data := append(sr.out.logRest, buf[:n]...)
		sr.out.logRest = nil
		if sr.out.skipPartial {
			// We jumped into the middle of a line: start at the next one.
			sr.out.skipPartial = false
			if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
				data = data[i+1:]
			} else {
				data = nil
			}
		}
		for len(data) > 0 {
			i := bytes.IndexAny(data, "\r\n")
			if i < 0 {
				sr.out.logRest = append([]byte(nil), data...)
				break
			}
			if i > 0 {
				sr.logLine(data[:i], now)
			}
			data = data[i+1:]
		}
		if len(sr.out.logRest) > 64<<10 {
			sr.logLine(sr.out.logRest, now)
			sr.out.logRest = nil
		}
		if !final {
			break
		}
	}
	if len(sr.out.logRest) > 0 {
		// An unfinished tqdm redraw still tells how far it is, and in
		// which stage: the stage moves with the bar, not a line later.
		sr.stageLine(sr.out.logRest, now)
		sr.progressLine(sr.out.logRest, now)
		if final {
			sr.logLine(sr.out.logRest, now)
			sr.out.logRest = nil
		}
	}
}

func (sr *stepRun) progressLine(line []byte, now time.Time) {
	if sr.step.Progress == nil && !bytes.ContainsAny(line, "%/") {
		return
	}
	if d, t, ok := parseProgress(sr.step.Progress, string(line)); ok {
		sr.prog.observe(now, d, t)
	}
}

func (sr *stepRun) logLine(line []byte, now time.Time) {
	// A stage first: its line may also be the first of its progress bar.
	if svc := sr.pr.ph.Service; svc != nil {
		if svc.ReadyLog != nil && !sr.readyLog && svc.ReadyLog.Match(line) {
			sr.readyLog = true
		}
		sr.stageLine(line, now)
		sr.loadLine(line, now)
	}
	sr.progressLine(line, now)
	if sr.step.ResultsFormat == campaign.FormatVLLMBench {
		if cols, vals, done := sr.vllm.line(line); done {
			row := Row{Phase: sr.pr.ph.ID, Step: sr.step.Index, Time: now, Cols: cols, Values: vals}
			if sr.pr.ph.Artifacts == nil {
				sr.addRow(row, true) // no --save-result file to pair it with
			} else {
				sr.vllm.held = append(sr.vllm.held, row) // paired at the step's end
			}
		}
	}
	if sr.step.ResultsFormat == campaign.FormatNCCLTests {
		if cols, vals, ok := sr.nccl.line(line); ok {
			sr.addRow(Row{Phase: sr.pr.ph.ID, Step: sr.step.Index, Time: now, Cols: cols, Values: vals}, true)
		}
	}
	if re := sr.step.Results; re != nil {
		s := string(line)
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			row := Row{Phase: sr.pr.ph.ID, Step: sr.step.Index, Time: now}
			for i, name := range re.SubexpNames() {
				if name != "" {
					row.Cols = append(row.Cols, name)
					row.Values = append(row.Values, parseValue(m[i]))
				}
			}
			sr.addRow(row, true)
		}
	}
}

// stageLine moves a starting service to the first later stage whose line
// this is.
func (sr *stepRun) stageLine(line []byte, now time.Time) {
	svc := sr.pr.ph.Service
	if svc == nil {
		return
	}
	for i := sr.stage + 1; i < len(svc.Stages); i++ {
		if svc.Stages[i].Log != nil && svc.Stages[i].Log.Match(line) {
			sr.enterStage(i, now)
			return
		}
	}
}

// enterStage moves a starting service to stage i: its start is noted for
// the ETA's pace and the Load table's marks (and kept in the step's
// folder, so that a runner taking the load over midway has the instant it
// was seen, not the instant the log was read again), and the progress bar
// of the stage before is let go.
func (sr *stepRun) enterStage(i int, now time.Time) {
	svc := sr.pr.ph.Service
	if len(sr.stageStarts) != len(svc.Stages) {
		sr.stageStarts = make([]time.Time, len(svc.Stages))
		sr.stageStarts[0] = sr.started // the time before the first line is the first stage's
	}
	if i > 0 {
		if at, ok := sr.stagesKept[i]; ok {
			now = at
		} else if !sr.replaying {
			sr.keepStage(i, now)
		}
		sr.stageStarts[i] = now
	}
	sr.stage = i
	sr.prog = progressTrack{}
	sr.pr.state.Steps[0].Stage = svc.Stages[i].Name
}

func parseValue(s string) any {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

// stagesFile, in a service's step folder, has a line for each stage as it
// was reached: {"stage":2,"t":"..."}.
const stagesFile = "stages.jsonl"

type stageKept struct {
	Stage int       `json:"stage"`
	T     time.Time `json:"t"`
}

// keepStage notes stage i reached at now in the step's folder.
func (sr *stepRun) keepStage(i int, now time.Time) {
	if sr.dir == "" {
		return // no folder (a step not started, in a test): nothing to keep
	}
	b, err := json.Marshal(stageKept{Stage: i, T: now})
	if err != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(sr.dir, stagesFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return // the ETA and the marks are then the re-read's, as before
	}
	f.Write(append(b, '\n'))
	f.Close()
}

// readStagesKept reads the stages a step's earlier runner saw reached.
func readStagesKept(dir string) map[int]time.Time {
	b, err := os.ReadFile(filepath.Join(dir, stagesFile))
	if err != nil {
		return nil
	}
	out := map[int]time.Time{}
	for line := range bytes.Lines(b) {
		var k stageKept
		if json.Unmarshal(line, &k) == nil && k.Stage > 0 {
			if _, ok := out[k.Stage]; !ok {
				out[k.Stage] = k.T
			}
		}
	}
	return out
}
