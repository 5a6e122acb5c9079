package report

// vLLM's own choice of all-reduce, from its server's log and command:
// custom all-reduce (a one-shot or two-shot kernel over P2P) or NCCL.
// On a PCIe box of more than two GPUs vLLM turns its custom all-reduce
// off and says so; then NCCL's small-message time is what decode pays,
// and the campaign's all_reduce_perf curve is the right prediction.
// Where it stays on, the curve (NCCL's) may overstate the all-reduce.

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner"
)

// customAROff is vLLM's warning when it turns its custom all-reduce off
// ("Custom allreduce is disabled because it's not supported on more than
// two PCIe-only GPUs", "... because your platform lacks GPU P2P
// capability", "... due to an unsupported world size: 3").
var customAROff = regexp.MustCompile(`Custom allreduce is disabled (?:because|due to) ([^.]*)`)

// arLog is what one service log said, read as far as off.
type arLog struct {
	off  int64
	said string // vLLM's reason for turning custom all-reduce off; "" while none
}

// allReduceChoice is what vLLM chose for the services phase id uses: off
// true with vLLM's words (or the flag on its command), false when a
// vLLM server ran tensor-parallel and said nothing of it (custom
// all-reduce on), and known false when no vLLM server's log says.
func (w *Writer) allReduceChoice(id string, st *runner.State) (off bool, words string, known bool) {
	for _, n := range w.plan.UsedPhases(id) {
		svc := w.plan.Phase(n)
		if svc == nil || svc.Service == nil || !strings.Contains(svc.Service.Run, "vllm") {
			continue
		}
		if strings.Contains(svc.Service.Run, "--disable-custom-all-reduce") {
			return true, "--disable-custom-all-reduce on " + n + "'s command", true
		}
		p := st.Phase(n)
		if p == nil || len(p.Steps) == 0 || p.Steps[0].Log == "" {
			continue
		}
		if said := w.readARLog(p.Steps[0].Log); said != "" {
			return true, `"Custom allreduce is disabled because ` + said + `" (` + n + "'s log)", true
		}
		if tp, _, _ := w.plan.ParallelOf(id); tp > 1 && p.Status != runner.Pending {
			return false, n + "'s log has no line turning vLLM's custom all-reduce off", true
		}
	}
	return false, "", false
}

// readARLog reads a service log from where it was last read, for vLLM's
// custom all-reduce line.
func (w *Writer) readARLog(path string) string {
	if w.arLogs == nil {
		w.arLogs = map[string]*arLog{}
	}
	l := w.arLogs[path]
	if l == nil {
		l = &arLog{}
		w.arLogs[path] = l
	}
	if l.said != "" {
		return l.said
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < l.off {
		l.off = 0 // a new log in its place
	}
	f.Seek(l.off, io.SeekStart)
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // a line still being written is read whole next time
		}
		l.off += int64(len(line))
		if m := customAROff.FindStringSubmatch(line); m != nil {
			l.said = safe.Line(strings.TrimSpace(m[1]), 200)
			return l.said
		}
	}
	return ""
}
