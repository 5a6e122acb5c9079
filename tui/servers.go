package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/link"
)

// The services' own view in the window: a line in the Phases header while
// a phase that uses a scraped service runs ("serve: running 64 · waiting
// 12 · KV 93% · 4,210 tok/s · 3 preempted"), with its tokens/s of the last
// scrapes as a sparkline.

// ServerSource gives the services' lines, as the runner sends them; the
// GPU side (Options.Sampler) of a window attached to a runner is one.
type ServerSource interface {
	Servers() map[string]*link.ServerLine
}

// serverLine is a service's line as the window reads it.
type serverLine struct {
	At                                      time.Time
	Running, Waiting, KV, TokS, Preemptions gpu.Metric   // KV 0..1
	History                                 []gpu.Metric // tokens/s per scrape, oldest first
	Err                                     string
}

func lineOf(w *link.ServerLine) serverLine {
	m := func(v *float64) gpu.Metric {
		if v == nil {
			return gpu.Metric{Why: "not exported"}
		}
		return gpu.Metric{V: *v, OK: true}
	}
	l := serverLine{At: w.At, Running: m(w.Running), Waiting: m(w.Waiting), KV: m(w.KV), TokS: m(w.TokS), Preemptions: m(w.Preemptions), Err: w.Err}
	for _, h := range w.History {
		l.History = append(l.History, m(h))
	}
	return l
}

// serverNote is the line for the services a running phase uses, "" when
// none is scraped.
func (m *model) serverNote() string {
	src, ok := m.opts.Sampler.(ServerSource)
	if !ok || m.state == nil || m.opts.Plan == nil {
		return ""
	}
	lines := src.Servers()
	if len(lines) == 0 {
		return ""
	}
	var parts []string
	for _, p := range m.state.Phases {
		w, ok := lines[p.ID]
		if !ok || w == nil || p.Status != runner.Ready || !m.serviceInUse(p.ID) {
			continue
		}
		parts = append(parts, p.ID+": "+m.serverWords(lineOf(w)))
	}
	return strings.Join(parts, " · ")
}

// serviceInUse says a running phase needs the service.
func (m *model) serviceInUse(id string) bool {
	for _, p := range m.state.Phases {
		if p.Status == runner.Running && m.opts.Plan.Uses(p.ID, id) {
			return true
		}
	}
	return false
}

func (m *model) serverWords(l serverLine) string {
	if l.Err != "" && l.At.IsZero() {
		return "metrics not read: " + l.Err
	}
	var w []string
	num := func(v gpu.Metric, what string) {
		if v.OK {
			w = append(w, what+" "+format.Grouped(v.V))
		}
	}
	num(l.Running, "running")
	num(l.Waiting, "waiting")
	if l.KV.OK {
		w = append(w, fmt.Sprintf("KV %.0f%%", 100*l.KV.V))
	}
	if l.TokS.OK {
		w = append(w, format.Grouped(l.TokS.V)+" tok/s")
	}
	if l.Preemptions.OK {
		w = append(w, format.Grouped(l.Preemptions.V)+" preempted")
	}
	out := strings.Join(w, " · ")
	if len(l.History) > 1 {
		var vals []float64
		for _, h := range l.History {
			v := -1.0
			if h.OK {
				v = h.V
			}
			vals = append(vals, v)
		}
		out += " " + m.spark(scaleTo100(vals), min(len(vals), 20))
	}
	return out
}

// scaleTo100 puts a series on the 0..100 scale the sparklines draw, its
// peak at 100; a missing point (<0) stays missing.
func scaleTo100(vals []float64) []float32 {
	peak := 0.0
	for _, v := range vals {
		peak = max(peak, v)
	}
	out := make([]float32, len(vals))
	for i, v := range vals {
		switch {
		case v < 0:
			out[i] = -1
		case peak > 0:
			out[i] = float32(100 * v / peak)
		}
	}
	return out
}
