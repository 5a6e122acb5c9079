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
		Now: func() time.Time { return t0.Add(20 * time.Minute) }})
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

// BenchmarkPaint200x60 is what bubbletea's renderer does with a frame that
// changed: parse the whole styled frame into cells, diff it with the last
// one and write the difference. Two frames a second apart alternate, as in
// steady state.
//
//	go test ./tui -run XXX -bench Paint -benchmem
func BenchmarkPaint200x60(b *testing.B) {
	gpus := newFakeGPUs(8)
	now := t0.Add(20 * time.Minute)
	m := newModel(Options{Runner: &fakeRunner{}, Events: make(chan runner.Event), Sampler: gpus, Plan: testPlan(b),
		Now: func() time.Time { return now }})
	m.w, m.h = 200, 60
	m.state = loadingState("")
	m.samples = gpus.samples()
	frames := []string{m.render()}
	now = now.Add(time.Second)
	m.samples[0].Util.V++
	frames = append(frames, m.render())
	buf := uv.NewScreenBuffer(200, 60)
	r := uv.NewTerminalRenderer(io.Discard, []string{"TERM=xterm-256color"})
	r.Resize(200, 60)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Clear()
		uv.NewStyledString(frames[i%2]).Draw(buf, buf.Bounds())
		r.Render(buf.RenderBuffer)
		r.Flush()
	}
}
