// Package history holds a campaign's records over time: every record
// (NAME.json) under the folders given, ordered by when each campaign
// started, a series for each phase, point and metric (the identity
// compare holds two campaigns by), the change points of each series
// (edivisive.go), and what changed in the recorded conditions between the
// campaigns either side of a change, ranked by how many series moved with
// it.
package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Campaign is one record of the history.
type Campaign struct {
	Path    string    `json:"path"`
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	// Commit is the campaign folder's git commit, else its campaign file's
	// hash: what Otava's CSV and BMF call the run.
	Commit     string                 `json:"commit,omitempty"`
	conditions *conditions.Conditions // as it started
	last       *conditions.Conditions // as it ended
}

// Value is one campaign's value of a series: the mean of its runs, their
// standard deviation and count.
type Value struct {
	Campaign int     `json:"campaign"` // index into History.Campaigns
	Mean     float64 `json:"mean"`
	SD       float64 `json:"sd,omitempty"`
	N        int     `json:"n"`
	Stamped  bool    `json:"stamped,omitempty"` // a run of it was taken under bad conditions
	Half     float64 `json:"-"`                 // its mean's 95% interval (results.Stat's), 0 under two runs
}

// Series is one phase's metric at one point, campaign after campaign.
type Series struct {
	Phase  string             `json:"phase"`
	Point  string             `json:"point,omitempty"`
	Metric string             `json:"metric"`
	Better campaign.Direction `json:"better,omitempty"`
	Values []Value            `json:"values"`
}

// Name is how a series is said: phase, point, metric.
func (s *Series) Name() string {
	return strings.Join(slices.DeleteFunc([]string{s.Phase, s.Point, s.Metric}, func(x string) bool { return x == "" }), " ")
}

// History is the records read, the series they make, and their changes.
type History struct {
	Campaigns []Campaign `json:"campaigns"`
	Series    []*Series  `json:"series"`
	Changes   []Change   `json:"changes"`
	Causes    []Cause    `json:"causes,omitempty"`
	Options   Options    `json:"options"`
	// Said: what was left out or taken a way that matters, with why (a
	// JSON file that is no record, two campaigns that started at once, a
	// metric whose direction changed).
	Said []string `json:"said,omitempty"`
}

// Load reads every record under paths (folders walked, a campaign's state
// dir and its kept versions left out; files taken as given), one at a
// time: what is kept of each is its measures, never its rows.
func Load(paths []string) (*History, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .greenlight: state, not records
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".json") {
				files = append(files, path)
			}
			return nil
		})
	}
	h := &History{Options: DefaultOptions}
	type loaded struct {
		c  Campaign
		ms []compare.Measure
	}
	var all []loaded
	notRecords := 0
	for _, f := range files {
		r, ms, err := compare.Measures(f, nil)
		if err != nil {
			if strings.Contains(err.Error(), "not a greenlight record") {
				notRecords++
				continue
			}
			h.Said = append(h.Said, "left out: "+err.Error())
			continue
		}
		c := Campaign{Path: f, Name: r.Campaign.Name, Started: r.Campaign.Started}
		if c.Started.IsZero() {
			c.Started = r.Campaign.Written
			h.Said = append(h.Said, fmt.Sprintf("%s has no start time: ordered by when it was written", f))
		}
		if b := r.Conditions; b != nil {
			first, last := b.First, b.Last
			c.conditions, c.last = &first, &last
			switch {
			case first.Git != nil && first.Git.Commit != "":
				c.Commit = first.Git.Commit
			case first.FileHash != "":
				c.Commit = first.FileHash
			}
		}
		// A sweep's axes are in its rows too: where, not what was measured.
		axes := map[string]bool{}
		for _, p := range r.Phases {
			for _, a := range p.Axes {
				axes[p.ID+"\x00"+a] = true
			}
		}
		ms = slices.DeleteFunc(ms, func(m compare.Measure) bool { return axes[m.Phase+"\x00"+m.Metric] })
		all = append(all, loaded{c, ms})
	}
	if notRecords > 0 {
		h.Said = append(h.Said, fmt.Sprintf("%d JSON file(s) that are not greenlight records left out", notRecords))
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no greenlight record (NAME.json) under %s", strings.Join(paths, ", "))
	}
	slices.SortStableFunc(all, func(a, b loaded) int {
		if c := a.c.Started.Compare(b.c.Started); c != 0 {
			return c
		}
		return strings.Compare(a.c.Path, b.c.Path)
	})
	byKey := map[string]*Series{}
	for i, l := range all {
		if i > 0 && l.c.Started.Equal(all[i-1].c.Started) {
			h.Said = append(h.Said, fmt.Sprintf("%s and %s started at the same time (%s): ordered by their paths", all[i-1].c.Path, l.c.Path, l.c.Started.Format(time.RFC3339)))
		}
		h.Campaigns = append(h.Campaigns, l.c)
		for _, m := range l.ms {
			if m.Stat.N == 0 {
				continue
			}
			k := m.Phase + "\x00" + m.Point + "\x00" + m.Metric
			s := byKey[k]
			if s == nil {
				s = &Series{Phase: m.Phase, Point: m.Point, Metric: m.Metric, Better: m.Better}
				byKey[k] = s
				h.Series = append(h.Series, s)
			}
			if m.Better != "" && s.Better != "" && m.Better != s.Better {
				h.Said = append(h.Said, fmt.Sprintf("%s: better %s up to %s, %s from it on: judged by the newest", s.Name(), s.Better, l.c.Path, m.Better))
			}
			if m.Better != "" {
				s.Better = m.Better
			}
			s.Values = append(s.Values, Value{Campaign: i, Mean: m.Stat.Mean, SD: m.Stat.SD, N: m.Stat.N, Half: m.Stat.Half, Stamped: len(m.Stamps) > 0})
		}
	}
	h.sayRenamed()
	return h, nil
}

// sayRenamed says where a series ends at the campaign another, of the
// same point and metric in a phase of another name, begins: a phase
// renamed reads as two series, each too short to judge across the rename.
func (h *History) sayRenamed() {
	for _, a := range h.Series {
		end := a.Values[len(a.Values)-1].Campaign
		if end == len(h.Campaigns)-1 {
			continue
		}
		for _, b := range h.Series {
			if b.Phase != a.Phase && b.Point == a.Point && b.Metric == a.Metric && b.Values[0].Campaign == end+1 {
				h.Said = append(h.Said, fmt.Sprintf("%s ends at %s and %s begins at the next campaign: a phase renamed reads as two series, each judged alone",
					a.Name(), h.Campaigns[end].Path, b.Name()))
			}
		}
	}
}
