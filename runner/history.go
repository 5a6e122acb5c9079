package runner

import (
	"encoding/json"
	"os"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/internal/files"
)

// history keeps how long each step took on earlier runs, keyed by the
// step's Key, so an edited command starts a fresh record.
type history struct {
	path string
	Runs map[string][]time.Duration `json:"runs"`
}

const historyKeep = 10

func loadHistory(path string) *history {
	h := &history{path: path, Runs: map[string][]time.Duration{}}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, h)
		if h.Runs == nil {
			h.Runs = map[string][]time.Duration{}
		}
	}
	return h
}

func (h *history) typical(key string) time.Duration { return typical(h.Runs[key]) }

func (h *history) add(key string, d time.Duration) error {
	runs := append(h.Runs[key], d)
	if len(runs) > historyKeep {
		runs = runs[len(runs)-historyKeep:]
	}
	h.Runs[key] = runs
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return files.Replace(h.path, b, true)
}

// guess is how long a step that has not started is expected to take:
// its history, else its estimate; 0 and "" when neither says.
func (h *history) guess(s *campaign.Step) (time.Duration, string) {
	if d := h.typical(s.Key); d > 0 {
		return d, SourceHistory
	}
	if s.Estimate > 0 {
		return s.Estimate, SourceEstimate
	}
	return 0, ""
}
