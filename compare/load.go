package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Load reads the record at path: a record (NAME.json), or a results file
// (NAME.md) with its record beside it. A campaign file is found by the
// caller (its results file may have moved with --report).
func Load(path string) (*record.Record, error) {
	p, err := recordPath(path)
	if err != nil {
		return nil, err
	}
	return record.Read(p)
}

// loadSide reads the record at path as Load does, streaming its rows into
// its side: a record of a million rows costs its values, not its rows.
func loadSide(path string, rename map[string]string) (*record.Record, *side, error) {
	p, err := recordPath(path)
	if err != nil {
		return nil, nil, err
	}
	s := newSide(rename)
	r, err := record.Stream(p, func(row record.Row) error { s.add(row); return nil })
	if err != nil {
		return nil, nil, err
	}
	s.setPhases(r.Phases)
	return r, s, nil
}

// recordPath is the record a path names: itself, or the record beside a
// results file.
func recordPath(path string) (string, error) {
	p := path
	if !strings.EqualFold(filepath.Ext(path), ".json") {
		p = record.Name(path)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: no such file", path)
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s has no record beside it (%s): it was written by a greenlight older than the record, or is not a results file; `greenlight report CAMPAIGN.yaml` writes the record from the campaign's state dir", path, filepath.Base(p))
		}
	}
	return p, nil
}

// Measure is one metric at one point of one phase as one campaign
// measured it: the identity compare holds two campaigns by (a point's
// axes, a table's measurement, a metric renamed), the campaign's values
// (its results model's runs where it has one, else its rows), which way
// is better and on what basis, and the stamps its rows carry.
type Measure struct {
	Phase, Point, Metric string
	Stat                 Stat
	Better               campaign.Direction
	BetterBasis          string // "" where the phase says; else how the name was read
	Stamps               []string
}

// Measures reads the record at path (NAME.json, or the results file it is
// beside), its rows streamed: each measure once, in the record's order.
func Measures(path string, rename map[string]string) (*record.Record, []Measure, error) {
	r, s, err := loadSide(path, rename)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Measure, 0, len(s.order))
	for _, k := range s.order {
		dir, basis := better(k, s.phases)
		out = append(out, Measure{Phase: k.phase, Point: k.point, Metric: k.metric, Stat: s.statFor(k), Better: dir, BetterBasis: basis, Stamps: s.stamps[k]})
	}
	return r, out, nil
}
