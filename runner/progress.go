package runner

import (
	"regexp"
	"sort"
	"strconv"
	"time"
)

// A step's progress, read from its log lines, and the rate it gives.

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
