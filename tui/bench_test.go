package tui

import (
	"fmt"
	"io"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"

	"github.com/greenlight-run/greenlight/runner"
)

// BenchmarkView200x60: one full frame with 8 GPUs, 8 phases and a full log
// pane. Budget: under 1 ms.
//
//	go test ./tui -run XXX -bench View -benchmem
func BenchmarkView200x60(b *testing.B) {
	gpus := newFakeGPUs(8)
	m := newModel(Options{Runner: &fakeRunner{}, Events: make(chan runner.Event), Sampler: gpus, Plan: testPlan(b),
		Now: func() time.Time { return t0.Add(20 * time.Minute) }, Output: io.Discard})
	m.w, m.h = 200, 60
	st := loadingState("")
	for len(st.Phases) < 8 {
		p := st.Phases[1]
		p.ID = fmt.Sprintf("extra%d", len(st.Phases))
		st.Phases = append(st.Phases, p)
	}
	m.state = st
	m.samples = gpus.samples()
	for i := 0; i < 200; i++ {
		m.logs.lines = append(m.logs.lines, fmt.Sprintf("INFO 12-02 14:%02d:%02d [gpu_model_runner.py:2007] line %d of the step's log, long enough to be cut at the pane's edge ........", i/60, i%60, i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.render() // View would return its cached frame
	}
}

// BenchmarkPaint200x60 is what it costs to put a changed frame on the
// terminal, two ways side by side, on frames a second apart in steady
// state (clock, ETA and every GPU row changed):
//
//   - bubbletea: what bubbletea's renderer does with any changed frame:
//     clear its cell buffer, parse the whole styled frame into it, diff
//     every line, hashing each for scroll detection, write the difference;
//
//   - screen: what greenlight's screen does: parse and diff only the
//     lines that differ from the last frame, no scroll detection.
//
//     go test ./tui -run XXX -bench Paint -benchmem
func BenchmarkPaint200x60(b *testing.B) {
	frames := steadyFrames(b, 200, 60)
	b.Run("bubbletea", func(b *testing.B) {
		buf := uv.NewScreenBuffer(200, 60)
		r := uv.NewTerminalRenderer(io.Discard, []string{"TERM=xterm-256color"})
		r.SetFullscreen(true)
		r.SetScrollOptim(true)
		r.Resize(200, 60)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			buf.Clear()
			uv.NewStyledString(frames[i%2]).Draw(buf, buf.Bounds())
			r.Render(buf.RenderBuffer)
			r.Flush()
		}
	})
	b.Run("screen", func(b *testing.B) {
		scr := newScreen(io.Discard, []string{"TERM=xterm-256color"})
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			scr.paint(frames[i%2], 200, 60)
		}
	})
}

// steadyFrames are two frames a second apart with 8 busy GPUs.
func steadyFrames(b *testing.B, w, h int) []string {
	gpus := newFakeGPUs(8)
	now := t0.Add(20 * time.Minute)
	m := newModel(Options{Runner: &fakeRunner{}, Events: make(chan runner.Event), Sampler: gpus, Plan: testPlan(b),
		Now: func() time.Time { return now }, Output: io.Discard})
	m.w, m.h = w, h
	m.state = loadingState("")
	var frames []string
	for k := range 2 {
		m.samples = gpus.samples()
		for i := range m.samples {
			m.samples[i].Util.V += float64(k)
			m.samples[i].Power.V += float64(k)
		}
		frames = append(frames, m.render())
		now = now.Add(time.Second)
	}
	return frames
}
