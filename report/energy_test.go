package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
)

// TestEnergyPerToken: a token throughput gets its energy per token, the
// phase's GPUs' summed mean power over it as the step's facts have it
// (2 × 512 W at 64 tok/s is 16 J/token), in the phase's block and beside
// the header's key result; the GPU table has each GPU's energy and the
// phase's in all; a rebuild without the GPU history (greenlight report)
// keeps it. A step without facts has no energy per token.
func TestEnergyPerToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.md")
	state := t.TempDir()
	w := NewWriter(path, testPlan(t), testEnv(), fakeGPUs{}, state)
	st := fullState(w.plan)
	bench := st.Phase("bench")
	bench.Steps[0].Started, bench.Steps[0].Ended, bench.Steps[0].Status = t0, t0.Add(60e9), runner.Done
	bench.Steps[0].Results = []runner.Row{{Cols: []string{"batch", "tok_s"}, Values: []any{16.0, 64.0}}}
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "J/token") {
		t.Errorf("a step without facts has an energy per token:\n%s", b)
	}
	bench.Steps[0].Facts = &runner.StepFacts{Readings: 120, PowerW: 1024, PowerGPUs: 2, EnergyWh: 17.07, EnergyFrom: runner.EnergyCounter}
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		b, _ := os.ReadFile(path)
		md := string(b)
		for _, want := range []string{
			"- step 1: tok_s 64 tok/s at 1024 W (2 GPUs, their mean power while the step ran, 17.07 Wh drawn by the GPUs' energy counters read at the step's start and end): **16 J/token**",
			"| tok_s = 64 · 16 J/token |",
		} {
			if !strings.Contains(md, want) {
				t.Errorf("%s: the results file lacks %q", what, want)
			}
		}
	}
	check("live")
	b, _ := os.ReadFile(path)
	for _, want := range []string{"| 0 | 72 % | 99 % | 127.4 GiB | 512 W | 690 W | 68 Wh | 74 °C |  |", "Energy of the phase's GPUs: 137 Wh in all (2 GPUs"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the GPU table lacks %q", want)
		}
	}
	if err := NewWriter(path, testPlan(t), testEnv(), nil, state).Write(st); err != nil {
		t.Fatal(err)
	}
	check("rebuilt")
}

// TestTroubleSpans: each troubled reading stands for the time to its
// GPU's next reading (the last for one interval more, within the phase),
// and overlapping stretches of two GPUs are one band.
func TestTroubleSpans(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var hot uint16 // a bit that is trouble (thermal, HW slowdown)
	for b := range 16 {
		if (gpu.Point{Throttle: 1 << b}).Troubled(false) {
			hot = 1 << b
			break
		}
	}
	g0 := []gpu.Point{{T: at(0)}, {T: at(2), Throttle: hot}, {T: at(4), Throttle: hot}, {T: at(6)}}
	g1 := []gpu.Point{{T: at(5), Throttle: hot}, {T: at(9)}, {T: at(20), Throttle: hot}}
	got := troubleSpans([][]gpu.Point{g0, g1}, nil, t0, at(25), time.Second)
	want := [][2]float64{{2, 9}, {20, 25}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("spans %v, want %v", got, want)
	}
}
