package history

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Change is a change point of one series: where, by how much, which way
// is better, and what changed in the conditions between the campaigns
// either side of it.
type Change struct {
	Series    int     `json:"series"`   // index into History.Series
	Campaign  int     `json:"campaign"` // the first campaign after the change
	Before    int     `json:"before"`   // the last campaign before it
	Mean1     float64 `json:"mean_before"`
	Mean2     float64 `json:"mean_after"`
	Std1      float64 `json:"std_before"`
	Std2      float64 `json:"std_after"`
	N1        int     `json:"n_before"`
	N2        int     `json:"n_after"`
	ChangePct float64 `json:"change_pct"` // (after − before) / before × 100
	// LowPct and HighPct are the change's 95% interval, in the same
	// units: Welch's, over the two sides' campaign means; both 0 where a
	// side has one campaign (no spread to tell it by).
	LowPct     float64  `json:"change_low_pct,omitempty"`
	HighPct    float64  `json:"change_high_pct,omitempty"`
	P          float64  `json:"p"`
	Verdict    string   `json:"verdict"` // better, worse, changed (no way is known to be better)
	Conditions []string `json:"conditions_changed,omitempty"`
	// Near: where nothing changed between the campaigns either side, what
	// changed one campaign before or after (a change point is placed to
	// within a campaign where the values are noisy), said with where.
	Near []string `json:"conditions_changed_near,omitempty"`
}

// IntervalWords is the change's 95% interval as a line says it, " [95%
// +4.9% to +7.1%]"; "" where it has none.
func (c Change) IntervalWords() string {
	if c.LowPct == 0 && c.HighPct == 0 {
		return ""
	}
	return fmt.Sprintf(" [95%% %+.1f%% to %+.1f%%]", c.LowPct, c.HighPct)
}

// changeInterval is a change's 95% interval as a share of the mean
// before it, by Welch's t over the two sides' campaign means (their
// population SDs made sample SDs); zeros under two campaigns a side.
func changeInterval(c Change) (low, high float64) {
	if c.N1 < 2 || c.N2 < 2 || c.Mean1 == 0 {
		return 0, 0
	}
	sample := func(n int, mean, pop float64) compare.Stat {
		return compare.Stat{N: n, Mean: mean, SD: pop * math.Sqrt(float64(n)/float64(n-1))}
	}
	lo, hi := compare.WelchInterval(sample(c.N1, c.Mean1, c.Std1), sample(c.N2, c.Mean2, c.Std2))
	return 100 * lo / math.Abs(c.Mean1), 100 * hi / math.Abs(c.Mean1)
}

// Cause is one change in the conditions and the series that moved with
// it: at the campaign it came with, or one either side.
type Cause struct {
	What     string `json:"what"` // "driver 580.95 → 590.12"
	Campaign int    `json:"campaign"`
	Moved    int    `json:"series_moved"`
}

// Analyze finds the change points of every series with o, and ranks the
// changes in the conditions by how many series moved with each.
func (h *History) Analyze(o Options) {
	h.Options, h.Changes, h.Causes = o, nil, nil
	moved := map[int]int{} // campaign: series changed there
	for si, s := range h.Series {
		if len(s.Values) < 3 {
			continue
		}
		xs := make([]float64, len(s.Values))
		for i, v := range s.Values {
			xs[i] = v.Mean
		}
		for _, cp := range ChangePoints(xs, o) {
			after, before := s.Values[cp.Index].Campaign, s.Values[cp.Index-1].Campaign
			c := Change{Series: si, Campaign: after, Before: before, Mean1: cp.Mean1, Mean2: cp.Mean2, Std1: cp.Std1, Std2: cp.Std2,
				N1: cp.N1, N2: cp.N2, ChangePct: 100 * cp.Forward(), P: cp.P, Verdict: verdict(s.Better, cp.Forward())}
			c.LowPct, c.HighPct = changeInterval(c)
			c.Conditions = h.conditionsBetween(before, after)
			if len(c.Conditions) == 0 {
				if before > 0 {
					for _, w := range h.conditionsBetween(before-1, before) {
						c.Near = append(c.Near, "one campaign before the change: "+w)
					}
				}
				if after+1 < len(h.Campaigns) {
					for _, w := range h.conditionsBetween(after, after+1) {
						c.Near = append(c.Near, "one campaign after the change: "+w)
					}
				}
			}
			h.Changes = append(h.Changes, c)
			moved[after]++
		}
	}
	// Each change in the conditions, with the series that moved at it or
	// a campaign either side of it.
	for j := 1; j < len(h.Campaigns); j++ {
		n := moved[j-1] + moved[j] + moved[j+1]
		if n == 0 {
			continue
		}
		for _, w := range h.conditionsBetween(j-1, j) {
			h.Causes = append(h.Causes, Cause{What: w, Campaign: j, Moved: n})
		}
	}
	slices.SortStableFunc(h.Causes, func(a, b Cause) int { return b.Moved - a.Moved })
	slices.SortStableFunc(h.Changes, func(a, b Change) int { return a.Campaign - b.Campaign })
}

// verdict is a change's word from the way its metric is better.
func verdict(better campaign.Direction, forward float64) string {
	switch {
	case better == campaign.Higher && forward > 0, better == campaign.Lower && forward < 0:
		return "better"
	case better == campaign.Higher, better == campaign.Lower:
		return "worse"
	}
	return "changed"
}

// conditionsBetween is what differs from the end of campaign a to the
// start of campaign b, as conditions says it.
func (h *History) conditionsBetween(a, b int) []string {
	ca, cb := h.Campaigns[a].last, h.Campaigns[b].conditions
	if ca == nil || cb == nil {
		return nil
	}
	var out []string
	for _, ch := range conditions.Diff(*ca, *cb) {
		out = append(out, ch.String())
	}
	return out
}

// Lines are the history in a person's words, a line each.
func (h *History) Lines() []string {
	first, last := h.Campaigns[0], h.Campaigns[len(h.Campaigns)-1]
	out := []string{fmt.Sprintf("%d campaigns (%s, %s to %s, %s), %d series; change points by E-Divisive means, Otava's way: window %d, p ≤ %g%s, relative change over %g%%",
		len(h.Campaigns), first.Name, first.Started.Format("2006-01-02 15:04"), last.Started.Format("2006-01-02 15:04"), last.Name, len(h.Series),
		h.Options.Window, h.Options.PValue, map[bool]string{false: " (× √n for the choice of split)", true: " (Otava's raw p)"}[h.Options.Otava], 100*h.Options.MinMagnitude)}
	if len(h.Changes) == 0 {
		out = append(out, "no change in any series")
	}
	for _, c := range h.Changes {
		s := h.Series[c.Series]
		at := h.Campaigns[c.Campaign]
		line := fmt.Sprintf("%s: %+.1f%%%s (%s → %s, p %.2g; %d campaigns before, %d after) at %s (%s), %s",
			s.Name(), c.ChangePct, c.IntervalWords(), format.Number(c.Mean1), format.Number(c.Mean2), c.P, c.N1, c.N2, at.Path, at.Started.Format("2006-01-02 15:04"), c.Verdict)
		if len(c.Conditions) > 0 {
			line += "; with it: " + strings.Join(c.Conditions, "; ")
		} else if len(c.Near) > 0 {
			line += "; nothing changed between the two campaigns, but " + strings.Join(c.Near, "; ")
		} else if at.conditions == nil || h.Campaigns[c.Before].last == nil {
			line += "; the conditions are not recorded on both sides"
		} else {
			line += "; no recorded condition changed between the two campaigns"
		}
		out = append(out, line)
	}
	if len(h.Causes) > 0 {
		out = append(out, "what changed in the conditions, by the series that moved with it (at it, or a campaign either side):")
		for _, c := range h.Causes {
			out = append(out, fmt.Sprintf("  %s at %s: %d series moved", c.What, h.Campaigns[c.Campaign].Path, c.Moved))
		}
	}
	for _, s := range h.Said {
		out = append(out, "note: "+s)
	}
	return out
}
