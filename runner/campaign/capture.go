package campaign

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// A guarded profiler capture: a phase whose step stops a profiler says
// how many ranks write a trace, and greenlight waits for the flush with
// its progress shown, names a rank whose trace never appears, and ends a
// flush that has stopped growing instead of hanging on it.
//
//	capture: {ranks: 8, stall: 5m}

// CaptureSpec is capture: as written.
type CaptureSpec struct {
	Ranks int    `yaml:"ranks" json:"ranks,omitempty"`
	Stall string `yaml:"stall" json:"stall,omitempty"`
}

// Capture is a phase's guarded capture.
type Capture struct {
	Ranks    int           // trace files the flush must write, one per rank
	Stall    time.Duration // no growth this long: the flush is said stalled and its wait ends
	Inferred string        // where Ranks came from when capture: did not say ("-tp 8 in serve")
}

// DefaultStall is how long a flush may grow no trace before it is said
// stalled.
const DefaultStall = 5 * time.Minute

// DefaultFlushQuiet is how long the traces must stop growing before the
// flush is done, for a capture whose step gives no wait_quiet.
const DefaultFlushQuiet = 30 * time.Second

func (l *loader) capture(cs *CaptureSpec, ph *Phase, at func(string) string) {
	c := &Capture{Ranks: cs.Ranks, Stall: DefaultStall}
	if cs.Stall != "" {
		c.Stall = l.dur(at(".capture.stall"), cs.Stall)
		if d, err := parseDuration(cs.Stall); err == nil && d <= 0 {
			l.add(at(".capture.stall"), "stall must be a positive duration", "write e.g. `stall: 5m`: how long a flush may grow no trace")
		}
	}
	switch {
	case cs.Ranks < 0:
		l.add(at(".capture.ranks"), "ranks must be one or more", "give the number of ranks writing a trace, e.g. `ranks: 8`")
	case len(ph.Artifacts) == 0:
		l.add(at(".capture"), "capture: watches the phase's trace files, but the phase lists no artifacts:", "add `artifacts: [traces/*.pt.trace.json.gz]` where the profiler writes")
	case ph.Service != nil:
		l.add(at(".capture"), "capture: belongs to the phase whose steps drive the profiler, not to a service", "move capture: to the phase that calls /start_profile and /stop_profile")
	}
	ph.Capture = c
}

// inferRanks gives each capture without ranks: the rank count of the
// service it uses (Plan.Uses): its command's tensor-parallel size times its
// pipeline-parallel size.
func (l *loader) inferRanks(plan *Plan, ids map[string]int) {
	for _, ph := range plan.Phases {
		c := ph.Capture
		if c == nil || c.Ranks > 0 {
			continue
		}
		for _, n := range plan.UsedPhases(ph.ID) { // a router in front of vLLM: vLLM's
			svc := plan.Phase(n)
			if svc == nil || svc.Service == nil {
				continue
			}
			if tp, pp, said := parallelism(svc.Service.Run); said != "" {
				c.Ranks, c.Inferred = tp*pp, said+" in "+n
				break
			}
		}
		if c.Ranks == 0 && !l.serviceNotNeeded(plan, ph, ids, "capture: gives no ranks", "or write `capture: {ranks: 8}`: one trace per rank", func(s *Service) string {
			_, _, said := parallelism(s.Run)
			return said
		}) {
			l.add(fmt.Sprintf("$.phases[%d].capture", ids[ph.ID]), "capture: gives no ranks, and no service this phase uses says --tensor-parallel-size or --pipeline-parallel-size",
				"write `capture: {ranks: 8}`: one trace per rank")
		}
	}
}

// ParallelOf is the tensor- and pipeline-parallel sizes of the service
// a phase uses (a router in front of vLLM: vLLM's), as its command says;
// said is what it found ("tensor-parallel 8 in serve"), "" when no
// service it uses says.
func (p *Plan) ParallelOf(phaseID string) (tp, pp int, said string) {
	for _, n := range p.UsedPhases(phaseID) {
		svc := p.Phase(n)
		if svc == nil || svc.Service == nil {
			continue
		}
		if tp, pp, said := parallelism(svc.Service.Run); said != "" {
			return tp, pp, said + " in " + n
		}
	}
	return 0, 0, ""
}

var (
	tpFlag = regexp.MustCompile(`(?:^|\s)(?:--tensor-parallel-size|-tp)(?:=|\s+)(\d+)`)
	ppFlag = regexp.MustCompile(`(?:^|\s)(?:--pipeline-parallel-size|-pp)(?:=|\s+)(\d+)`)
)

// parallelism reads a vLLM command's tensor- and pipeline-parallel sizes;
// said is what it found ("-tp 8 -pp 2"), "" when neither is there.
func parallelism(cmd string) (tp, pp int, said string) {
	tp, pp = 1, 1
	if m := tpFlag.FindStringSubmatch(cmd); m != nil {
		tp, _ = strconv.Atoi(m[1])
		said = "tensor-parallel " + m[1]
	}
	if m := ppFlag.FindStringSubmatch(cmd); m != nil {
		pp, _ = strconv.Atoi(m[1])
		if said != "" {
			said += " × "
		}
		said += "pipeline-parallel " + m[1]
	}
	return max(tp, 1), max(pp, 1), said
}

// String is the capture in words: "a capture of 8 ranks' traces
// (tensor-parallel 8 in serve)".
func (c *Capture) String() string {
	s := fmt.Sprintf("a capture of %d ranks' traces", c.Ranks)
	if c.Inferred != "" {
		s += " (" + c.Inferred + ")"
	}
	return s
}
