package runner

import (
	"slices"
	"sort"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

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
