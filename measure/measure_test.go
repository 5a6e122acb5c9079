package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/runner/state"
)

// TestSlurmPhaseSummarisesItsNodes: a phase on Slurm is summarised over
// the GPUs of the nodes its job ran on, whatever else the campaign scraped
// (another job on other nodes, the login node).
func TestSlurmPhaseSummarisesItsNodes(t *testing.T) {
	sums := []gpu.Summary{
		{Device: gpu.Device{Index: 0}},                              // this machine
		{Device: gpu.Device{Host: "gpu01", Index: 0}},               // the job's
		{Device: gpu.Device{Host: "gpu02.cluster.local", Index: 1}}, // the job's, by its FQDN
		{Device: gpu.Device{Host: "gpu07", Index: 0}},               // another job's
	}
	p := state.PhaseState{Slurm: &state.SlurmJob{ID: "9", Nodes: "gpu[01-02]"}}
	var got []string
	for _, s := range onItsNodes(sums, p) {
		got = append(got, s.Device.Host)
	}
	if strings.Join(got, " ") != "gpu01 gpu02.cluster.local" {
		t.Errorf("summarised %q; want the job's two nodes", got)
	}
	if n := len(onItsNodes(sums, state.PhaseState{})); n != 4 {
		t.Errorf("a phase run here kept %d of 4", n)
	}
}

type view metrics.Summary

func (v view) Window(from, to time.Time) metrics.Summary { return metrics.Summary(v) }

// TestServerFacts: a service's window as a run's facts: its gauges' mean
// and peak, its counters' growth, and a series it does not expose nil,
// never zero; a window with no scrape is no facts.
func TestServerFacts(t *testing.T) {
	v := view{Scrapes: 12, Every: 500 * time.Millisecond, Series: map[string]metrics.Stat{
		metrics.Running:  {N: 12, Mean: 23.5, Peak: 24},
		metrics.Waiting:  {N: 12, Mean: 7.9, Peak: 8},
		metrics.KVUsage:  {N: 12, Mean: 0.4, Peak: 0.41},
		metrics.Success:  {N: 12, Delta: 96},
		metrics.Rejected: {N: 12, Delta: 0},
	}}
	f, ok := ServerFacts("serve", v, time.Time{}, time.Time{})
	if !ok || f.Service != "serve" || f.Scrapes != 12 || f.EveryS != 0.5 {
		t.Fatalf("facts %+v, ok %v", f, ok)
	}
	if f.Running == nil || f.Running.Mean != 23.5 || f.Running.Peak != 24 || f.KV == nil || f.KV.Peak != 0.41 {
		t.Errorf("gauges %+v %+v %+v", f.Running, f.Waiting, f.KV)
	}
	if f.Finished == nil || *f.Finished != 96 || f.Rejected == nil || *f.Rejected != 0 {
		t.Errorf("counters: finished %v, rejected %v", f.Finished, f.Rejected)
	}
	if f.Preempted != nil || f.Aborted != nil || f.WaitingForRoom != nil {
		t.Errorf("series the server does not expose read as %v %v %v; want nil", f.Preempted, f.Aborted, f.WaitingForRoom)
	}
	if _, ok := ServerFacts("serve", view{}, time.Time{}, time.Time{}); ok {
		t.Error("a window with no scrape made facts")
	}
	// It stopped answering mid-run: the figures rest on the scrapes that
	// answered, and the others are counted and said; none answered, no
	// figure at all.
	v.Failed = map[string]int{"no answer in 2s": 5}
	f, _ = ServerFacts("serve", v, time.Time{}, time.Time{})
	if f.Failed != 5 || f.FailedWhy != "no answer in 2s (5)" || f.Running == nil {
		t.Errorf("a server that stopped answering: %+v", f)
	}
	f, ok = ServerFacts("serve", view{Failed: map[string]int{"HTTP 503": 3}}, time.Time{}, time.Time{})
	if !ok || f.Failed != 3 || f.Running != nil || f.Scrapes != 0 {
		t.Errorf("no scrape answered: %+v, ok %v; want the failures said and no figure", f, ok)
	}
}

// TestServerFactsOfARunSeenInPart: a runner killed while a run went on
// and started again after it ended saw it from one scrape at its start:
// the scrapes do not cover the run, so no figure is told and why is said;
// scrapes that cover it, every half second, are the run's.
func TestServerFactsOfARunSeenInPart(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 50, 31, 0, time.UTC)
	s := &metrics.Scraper{}
	s.Add(metrics.Sample{T: t0.Add(300 * time.Millisecond), V: map[string]float64{metrics.Running: 0, metrics.Waiting: 0}})
	s.Add(metrics.Sample{T: t0.Add(3 * time.Second), V: map[string]float64{metrics.Running: 2, metrics.Waiting: 0}})
	f, ok := ServerFacts("serve", s, t0, t0.Add(1800*time.Millisecond))
	if !ok || f.Running != nil || f.Waiting != nil || !strings.Contains(f.Unseen, "the server's view of the run is not told") {
		t.Errorf("a run seen from one scrape at its start: %+v", f)
	}
	if v := f.LoadVerdicts(8); len(v) != 0 {
		t.Errorf("a run not seen was judged: %q", v)
	}
	// Across the hole a kill left: one scrape before it, one after; their
	// gap is no cadence.
	hole := &metrics.Scraper{}
	hole.Add(metrics.Sample{T: t0.Add(100 * time.Millisecond), V: map[string]float64{metrics.Running: 0, metrics.Waiting: 0}})
	hole.Add(metrics.Sample{T: t0.Add(2300 * time.Millisecond), V: map[string]float64{metrics.Running: 0, metrics.Waiting: 0}})
	if f, _ := ServerFacts("serve", hole, t0, t0.Add(2500*time.Millisecond)); f.Unseen == "" || f.Running != nil {
		t.Errorf("a run across a 2.2 s hole: %+v", f)
	}
	covered := &metrics.Scraper{}
	for i := 0; i <= 4; i++ {
		covered.Add(metrics.Sample{T: t0.Add(time.Duration(i) * 500 * time.Millisecond), V: map[string]float64{metrics.Running: 4, metrics.Waiting: 0}})
	}
	if f, _ := ServerFacts("serve", covered, t0, t0.Add(2*time.Second)); f.Unseen != "" || f.Running == nil || f.Running.Peak != 4 {
		t.Errorf("a run covered every half second: %+v", f)
	}
}
