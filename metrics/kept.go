package metrics

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"time"
)

// A service's scrapes are kept in a file as they come (Scraper.Keep), a
// JSON line each, failures with their reason: the server's view outlives
// the runner, and the record is rebuilt from it (Load).

// keep appends sm to the Keep file. Best effort, not fsynced: a scrape
// lost to a machine's crash is one of thousands, and the window said it.
func (s *Scraper) keep(sm Sample) {
	if s.Keep == "" {
		return
	}
	if s.kept == nil {
		os.MkdirAll(filepath.Dir(s.Keep), 0o755)
		f, err := os.OpenFile(s.Keep, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return
		}
		s.kept = f
	}
	if b, err := json.Marshal(keptSample{T: sm.T, V: finite(sm.V), Err: sm.Err}); err == nil {
		s.kept.Write(append(b, '\n'))
	}
}

// keptSample is a line of a Keep file.
type keptSample struct {
	T   time.Time          `json:"t"`
	V   map[string]float64 `json:"v,omitempty"`
	Err string             `json:"err,omitempty"`
}

// finite leaves out what JSON cannot hold (NaN, infinities).
func finite(v map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(v))
	for k, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out[k] = x
		}
	}
	return out
}

// Load reads the scrapes kept at path into a Scraper that keeps
// appending there: a runner started again goes on with the server's
// history, and `greenlight report` summarises it. A torn last line is
// left out; a missing file is an empty history.
func Load(path string) (*Scraper, error) {
	s := &Scraper{Keep: path}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var k keptSample
		if json.Unmarshal(sc.Bytes(), &k) == nil {
			s.add(Sample{T: k.T, V: k.V, Err: k.Err})
		}
	}
	return s, sc.Err()
}

// Close lets the Keep file go.
func (s *Scraper) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept != nil {
		s.kept.Close()
		s.kept = nil
	}
}
