package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/greenlight-run/greenlight/record"
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
