package compare

import (
	"fmt"
	"slices"
	"sync"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Live says each new result's change against a baseline as it lands:
// "+4.1% vs bench0, better, beyond noise". The new side is every value
// of the metric at that point said so far, so the verdict learns as the
// repeats come.
type Live struct {
	name  string
	base  side
	plan  *campaign.Plan
	opts  Options
	mu    sync.Mutex
	now   side
	dirs  map[string]map[string]campaign.Direction // the campaign's own better:, by phase
	skips map[string]map[string]bool               // a sweep's axes and repeat, by phase: not metrics
	named map[string][]campaign.Metric             // the metrics a phase names, by phase
}

// NewLive holds plan's new results against base.
func NewLive(base *record.Record, plan *campaign.Plan, opts Options) *Live {
	l := &Live{name: base.Campaign.Name, base: gather(base, opts.Rename), plan: plan, opts: opts,
		now: side{vals: map[key][]float64{}, stamps: map[key][]string{}}, dirs: map[string]map[string]campaign.Direction{}, skips: map[string]map[string]bool{},
		named: map[string][]campaign.Metric{}}
	for _, ph := range plan.Phases {
		l.dirs[ph.ID] = campaign.Better(ph)
		l.skips[ph.ID] = ph.PointColumns()
		l.named[ph.ID] = ph.Metrics
	}
	return l
}

// Say is the change of a new result's main metric (the first of the
// metrics the phase names, else the first it expects something of, else
// the first with a direction, else the first; each with a baseline
// value),
// what matters first so that a narrow window shows it: "tok_s 57.2:
// +4.1% vs bench0, better, beyond noise"; "" when the baseline has none
// of its metrics at that point.
func (l *Live) Say(phase, point string, cols []string, vals []any) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var main *key
	rank := -1
	value := map[key]float64{}
	for i, c := range cols {
		f, ok := vals[i].(float64)
		if !ok || l.skips[phase][c] {
			continue
		}
		named := slices.IndexFunc(l.named[phase], func(m campaign.Metric) bool { return slices.Contains(m.Names(), c) })
		if named < 0 && len(l.named[phase]) > 0 {
			continue // an input or a count, not one of its metrics
		}
		k := key{phase, point, c}
		l.now.vals[k] = append(l.now.vals[k], f)
		value[k] = f
		if _, inBase := l.base.vals[k]; !inBase {
			continue
		}
		r := 0
		switch {
		case named >= 0:
			r = 3 + len(l.named[phase]) - named // the first named ranks highest
		case l.dirs[phase][c] != "": // an expect: or a better: of its own
			r = 2
		case l.dir(k) != "":
			r = 1
		}
		if r > rank {
			main, rank = &k, r
		}
	}
	if main == nil {
		return ""
	}
	at := ""
	if point != "" {
		at = " at " + point
	}
	dir, basis := l.way(*main)
	j := judge(*main, l.base, l.now, dir, l.opts)
	j.Way = basis
	return fmt.Sprintf("%s %s%s: %s", main.metric, format.Number(value[*main]), at, Word(j, l.name))
}

func (l *Live) dir(k key) campaign.Direction {
	d, _ := l.way(k)
	return d
}

// way is which way k improves, and its basis (campaign.ByName: its name).
func (l *Live) way(k key) (campaign.Direction, string) {
	if d, _ := campaign.Way(l.dirs[k.phase], k.metric, false); d != "" {
		return d, ""
	}
	return better(k, l.base.phases)
}
