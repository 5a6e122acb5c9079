package tui

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner"
)

// TestMissedExpectIsNoGreenMark: a phase done with an expectation missed
// or never produced shows ⚠, never the green ✓.
func TestMissedExpectIsNoGreenMark(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	done := runner.PhaseState{ID: "bench", Status: runner.Done}
	if g := m.glyph(done); !strings.Contains(g, m.gl.done) {
		t.Errorf("a clean phase: %q; want %q", g, m.gl.done)
	}
	done.ExpectFailed = 1
	if g := m.glyph(done); strings.Contains(g, m.gl.done) || !strings.Contains(g, m.gl.doubtful) {
		t.Errorf("a phase with a missed expectation: %q; want %q, not %q", g, m.gl.doubtful, m.gl.done)
	}
}
