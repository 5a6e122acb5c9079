package runner

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// ETA is a time-to-finish and where it came from.
type ETA struct {
	Source    string        `json:",omitzero"` // SourceProgress, SourceHistory, SourceEstimate, or "" when nothing is known
	Remaining time.Duration `json:",omitzero"` // meaningful when Known
	Known     bool          `json:",omitzero"`
	Over      time.Duration `json:",omitzero"` // running past its history or estimate by this much
	Partial   bool          `json:",omitzero"` // a lower bound: some remaining work has no estimate
	Waiting   bool          `json:",omitzero"` // a gate waits for a person on the remaining path
	Rate      string        `json:",omitzero"` // "11.4 s/it", when progress gives one
	Done      float64       `json:",omitzero"` // n of n/total, when known
	Total     float64       `json:",omitzero"`
	Fraction  float64       `json:",omitzero"` // 0..1; -1 when unknown
	// Queued: the step waits in Slurm's queue; StartsAt is when Slurm
	// expects it to start (zero when Slurm has no expectation yet), and
	// Remaining counts the wait until then.
	Queued   bool      `json:",omitzero"`
	StartsAt time.Time `json:",omitzero"`
}

// Text is the remaining time as a person reads it: "14m", "≥ 14m" when
// some remaining work has no estimate, "over by 4m", or "no estimate";
// never a negative time and never "0s" for unknown.
func (e ETA) Text() string {
	if e.Queued {
		if e.StartsAt.IsZero() {
			return "no start time from Slurm yet"
		}
		s := "starts ~" + e.StartsAt.Format("15:04") + " (Slurm)"
		rest := e
		rest.Queued = false
		if rest.Known || rest.Over > 0 {
			s += ", then " + rest.Text()
		}
		return s
	}
	switch {
	case e.Over > 0:
		return "over by " + format.Duration(e.Over)
	case !e.Known, e.Partial && e.Remaining < time.Second:
		return "no estimate" // "≥ 0s" says nothing
	case e.Partial:
		return "≥ " + format.Duration(e.Remaining)
	}
	return format.Duration(e.Remaining)
}

const (
	SourceProgress = "log progress"
	SourceHistory  = "history"
	SourceEstimate = "estimate"
	// SourceNeighbours: a sweep's point not run yet takes the time its
	// measured neighbours took in this attempt.
	SourceNeighbours = "measured points"
)

// tqdmCount and tqdmPercent read the progress bars that vLLM, Hugging Face
// and most Python tools print: "desc: 45% Completed | 29/64 [12:10<14:20, 11.4s/it]".
var (
	tqdmCount   = regexp.MustCompile(`(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) \[\d`)
	tqdmPercent = regexp.MustCompile(`(\d{1,3})%(?:\s*Completed|\|)`)
)

// parseProgress finds progress in one log line. A user regex with one
// group is a percent; with two, n and total. Without one, tqdm formats.
func parseProgress(re *regexp.Regexp, line string) (done, total float64, ok bool) {
	if re != nil {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return 0, 0, false
		}
		if len(m) >= 3 {
			n, e1 := strconv.ParseFloat(m[1], 64)
			t, e2 := strconv.ParseFloat(m[2], 64)
			if e1 != nil || e2 != nil || t <= 0 {
				return 0, 0, false
			}
			return n, t, true
		}
		p, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, 0, false
		}
		return p, 100, true
	}
	if m := tqdmCount.FindStringSubmatch(line); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		t, _ := strconv.ParseFloat(m[2], 64)
		if t > 0 {
			return n, t, true
		}
	}
	if m := tqdmPercent.FindStringSubmatch(line); m != nil {
		p, _ := strconv.ParseFloat(m[1], 64)
		return p, 100, true
	}
	return 0, 0, false
}

// progressTrack keeps a step's progress observations. Its rate is the
// time per unit over the whole run, leaving out intervals over three times
// the median: shards of uneven size and bursts average out, and a stall,
// once over, does not drag the estimate of the shards after it. While
// progress stalls the estimate stops falling at what the remaining units
// take, never reaching zero.
type progressTrack struct {
	last        time.Time // when progress last moved
	f           float64   // fraction done
	done, total float64
	seen        bool
	unitsPerSec float64
	steps       []unitStep // per increment: seconds per unit, units
	unit        string     // what is counted ("GB" for a prewarm); "it" when unsaid
}

type unitStep struct{ perUnit, units, secs float64 }

const maxSteps = 1024

func (p *progressTrack) observe(t time.Time, done, total float64) {
	if total <= 0 {
		return
	}
	f := min(max(done/total, 0), 1)
	if !p.seen || f < p.f || total != p.total {
		// First sight, or a new progress bar started (another stage).
		*p = progressTrack{last: t, f: f, done: done, total: total, seen: true}
		return
	}
	if done > p.done {
		dt := t.Sub(p.last).Seconds()
		switch {
		case dt < 0:
			p.f, p.done, p.last = f, done, t
		case dt == 0 && len(p.steps) > 0:
			// Lines read in one go carry one time: they add units to the
			// increment that brought them, not increments of no time.
			last := &p.steps[len(p.steps)-1]
			last.units += done - p.done
			last.perUnit = last.secs / last.units
			p.f, p.done = f, done
		case dt == 0:
			// Nothing to measure them against yet: they count with the next
			// increment, over the time since the last one.
			p.f = f
		default:
			p.steps = append(p.steps, unitStep{perUnit: dt / (done - p.done), units: done - p.done, secs: dt})
			if len(p.steps) > maxSteps {
				p.steps = p.steps[len(p.steps)-maxSteps:]
			}
			p.f, p.done, p.last = f, done, t
		}
	}
	if per := p.perUnit(); per > 0 {
		p.unitsPerSec = 1 / per
	}
}

// rebase forgets when the progress seen so far happened: a log read back
// whole after a restart carries no times, and must not be taken as made
// in the moment before the next line.
func (p *progressTrack) rebase(now time.Time) {
	if !p.seen {
		return
	}
	p.done, p.last, p.steps, p.unitsPerSec = p.f*p.total, now, nil, 0
}

// perUnit is the robust seconds per unit, or 0 before any progress.
func (p *progressTrack) perUnit() float64 {
	if len(p.steps) == 0 {
		return 0
	}
	per := make([]float64, len(p.steps))
	for i, s := range p.steps {
		per[i] = s.perUnit
	}
	sort.Float64s(per)
	limit := 3 * per[len(per)/2]
	var secs, units float64
	for _, s := range p.steps {
		if s.perUnit > limit {
			continue // a stall: held while it lasts, not spread over the rest
		}
		secs += s.perUnit * s.units
		units += s.units
	}
	if units == 0 {
		return per[len(per)/2]
	}
	return secs / units
}

// remaining estimates time to 100%; ok is false until there is a rate.
func (p *progressTrack) remaining(now time.Time) (time.Duration, bool) {
	per := p.perUnit()
	if !p.seen || per <= 0 {
		return 0, false
	}
	left := p.total - p.done
	if left <= 0 {
		return 0, true
	}
	since := now.Sub(p.last).Seconds()
	// The unit in progress may be nearly done; the ones after it are not.
	secs := max(left*per-since, (left-1)*per, per*0.1)
	return time.Duration(secs * float64(time.Second)), true
}

func (p *progressTrack) rateText() string {
	if p.unitsPerSec <= 0 {
		return ""
	}
	unit := "it"
	if p.unit != "" {
		unit = p.unit
	} else if p.total == 100 {
		unit = "%"
	}
	if p.unitsPerSec >= 1 {
		return strconv.FormatFloat(p.unitsPerSec, 'f', 1, 64) + " " + unit + "/s"
	}
	return strconv.FormatFloat(1/p.unitsPerSec, 'f', 1, 64) + " s/" + unit
}

// stepETA picks the best source for a running step.
func stepETA(now, started time.Time, p *progressTrack, history, estimate time.Duration, after time.Duration) ETA {
	e := ETA{Fraction: -1}
	elapsed := now.Sub(started)
	if p != nil && p.seen {
		e.Fraction, e.Done, e.Total, e.Rate = p.f, p.done, p.total, p.rateText()
		if rem, ok := p.remaining(now); ok {
			e.Source, e.Known, e.Remaining = SourceProgress, true, rem+after
			return e
		}
	}
	base, src := history, SourceHistory
	if base <= 0 {
		base, src = estimate, SourceEstimate
	}
	if base <= 0 {
		return e
	}
	e.Source = src
	if elapsed > base {
		e.Over = elapsed - base
		return e
	}
	e.Known, e.Remaining = true, base-elapsed
	if e.Fraction < 0 {
		e.Fraction = float64(elapsed) / float64(base)
	}
	return e
}

// typical is the median of the last five durations: one odd run does not
// move it.
func typical(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if len(ds) > 5 {
		ds = ds[len(ds)-5:]
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// simPhase is one phase as the campaign-ETA simulation sees it.
type simPhase struct {
	id        string
	needs     []string
	after     []string // ended before it starts, not used (campaign.Phase.After)
	gpus      []int
	remaining time.Duration
	known     bool
	running   bool
	finished  bool
	waiting   bool // a manual gate not yet given
	service   bool
	slurm     bool // on Slurm: holds no GPU of this machine
}

// campaignETA simulates the scheduler over what remains: phases start when
// their needs are done and no running phase shares their GPUs, so phases
// that may overlap do and the rest queue, as they will for real.
//
// It runs on every snapshot: a swept service's grid makes hundreds of
// phases, so phases are numbers here, those started leave the queue, and
// runs that can hold nothing any more leave the running list.
func campaignETA(phases []simPhase) ETA {
	e := ETA{Fraction: -1}
	n := len(phases)
	pos := make(map[string]int, n)
	for i, p := range phases {
		pos[p.id] = i
	}
	refs := func(ids []string) []int {
		out := make([]int, 0, len(ids))
		for _, id := range ids {
			if j, ok := pos[id]; ok {
				out = append(out, j)
			} else {
				out = append(out, -1) // never ends: as a map without it said
			}
		}
		return out
	}
	needs, after := make([][]int, n), make([][]int, n)
	// A service holds its GPUs against the phases that do not use it for
	// as long as a phase that needs it is left, as the runner does.
	dependents := make([][]int, n)
	for i, p := range phases {
		needs[i], after[i] = refs(p.needs), refs(p.after)
		for _, j := range needs[i] {
			if j >= 0 {
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	end := make([]time.Duration, n)
	ended := make([]bool, n) // end is set: finished, running or simulated
	endsBy := func(j int, now time.Duration) bool { return j >= 0 && ended[j] && end[j] <= now }
	type run struct {
		i     int
		gpus  []int
		end   time.Duration
		svc   bool
		slurm bool
	}
	var running []run
	var queue []int
	for i, p := range phases {
		switch {
		case p.finished:
			ended[i] = true
		case p.running:
			ended[i], end[i] = true, p.remaining
			running = append(running, run{i, p.gpus, p.remaining, p.service, p.slurm})
		default:
			queue = append(queue, i)
		}
		if !p.known && !p.finished {
			e.Partial = true
		}
		if p.waiting {
			e.Waiting = true
		}
	}
	held := func(r run, now time.Duration) bool {
		if r.end > now {
			return true
		}
		for _, d := range dependents[r.i] {
			if !endsBy(d, now) {
				return true
			}
		}
		return false
	}
	var now time.Duration
	for {
		started := false
		left := queue[:0]
		for _, i := range queue {
			p := &phases[i]
			ready := true
			for _, j := range needs[i] {
				ready = ready && endsBy(j, now)
			}
			for _, j := range after[i] {
				ready = ready && endsBy(j, now)
			}
			for _, r := range running {
				if !ready {
					break
				}
				if r.slurm || p.slurm || !campaign.SharesGPUs(r.gpus, p.gpus) || r.i == i {
					continue
				}
				switch {
				case !r.svc:
					ready = r.end <= now
				case slices.Contains(needs[i], r.i):
					// Uses the service: its needs check waits for ready.
				default:
					ready = !held(r, now)
				}
			}
			if !ready {
				left = append(left, i)
				continue
			}
			ended[i], end[i] = true, now+p.remaining
			running = append(running, run{i, p.gpus, now + p.remaining, p.service, p.slurm})
			started = true
		}
		queue = left
		if started {
			continue
		}
		next := time.Duration(-1)
		for _, r := range running {
			if r.end > now && (next < 0 || r.end < next) {
				next = r.end
			}
		}
		if next < 0 {
			break
		}
		now = next
		// What has ended and holds nothing any more is out of the way.
		kept := running[:0]
		for _, r := range running {
			if r.end > now || r.svc && held(r, now) {
				kept = append(kept, r)
			}
		}
		running = kept
	}
	var last time.Duration
	count := 0
	for i := range phases {
		if ended[i] {
			last = max(last, end[i])
			count++
		}
	}
	e.Known, e.Remaining = true, last
	if count < n {
		e.Partial = true
	}
	return e
}
