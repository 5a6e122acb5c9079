package report

// Energy per token: for a result that is a token throughput, the mean
// power of the phase's GPUs while its step ran over that throughput.

import (
	"fmt"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// IsTokenRate says a column is a token throughput (tokens per second),
// by campaign's one rule.
func IsTokenRate(col string) bool { return campaign.TokenRateByName(col) }

// stepPower is the summed mean power of the phase's GPUs over a step, in
// W, and how many GPUs it sums, from its facts; ok false before its end
// or when no reading fell in it.
func (w *Writer) stepPower(p runner.PhaseState, s runner.StepState) (watts float64, gpus int, ok bool) {
	f := w.factsOf(p, s)
	if f == nil || f.PowerGPUs == 0 {
		return 0, 0, false
	}
	return f.PowerW, f.PowerGPUs, true
}

// tokenEnergy is a row's token throughput and the energy per token of
// its step; ok false when the row has no token rate or no power reading.
func (w *Writer) tokenEnergy(p runner.PhaseState, s runner.StepState, row runner.Row) (col string, rate, jPerTok, watts float64, gpus int, ok bool) {
	for i, c := range row.Cols {
		if v, isNum := row.Values[i].(float64); isNum && v > 0 && IsTokenRate(c) {
			if watts, gpus, ok = w.stepPower(p, s); ok {
				return c, v, watts / v, watts, gpus, true
			}
			return "", 0, 0, 0, 0, false
		}
	}
	return "", 0, 0, 0, 0, false
}

// energySection is the phase's energy per token: one line per step whose
// last row is a token throughput.
func (w *Writer) energySection(ph *campaign.Phase, p runner.PhaseState, _ *runner.State) string {
	if ph.Sweep != nil {
		return ""
	}
	var lines []string
	for _, s := range p.Steps {
		if len(s.Results) == 0 {
			continue
		}
		col, rate, j, watts, gpus, ok := w.tokenEnergy(p, s, s.Results[len(s.Results)-1])
		if !ok {
			continue
		}
		drew := ""
		switch f := w.factsOf(p, s); {
		case f != nil && !f.ReadFrom.IsZero():
			drew = fmt.Sprintf(", read from %s only", f.ReadFrom.Format("15:04:05"))
		case f != nil && f.EnergyWh > 0:
			drew = fmt.Sprintf(", %s Wh drawn by %s", FormatNumber(f.EnergyWh), state.EnergyBasis(f.EnergyFrom))
		}
		lines = append(lines, fmt.Sprintf("- step %d: %s %s tok/s at %s W (%d GPUs, their mean power while the step ran%s): **%s J/token**",
			s.Index+1, cell(col), FormatNumber(rate), FormatNumber(float64(int(watts+0.5))), gpus, drew, FormatNumber(j)))
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n### Energy per token\n\n" + strings.Join(lines, "\n") + "\n"
}

// keyEnergy is the energy per token of a phase's key result, when it is
// a token throughput: "75.9 J/token".
// keyExtras are what the header says beside a phase's key result: its
// energy per token, its share of the roofline.
func (w *Writer) keyExtras(p runner.PhaseState, st *runner.State) string {
	var out []string
	for _, s := range []string{w.keyEnergy(p), w.keyRoof(p), w.keyBudget(p, st)} {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " · ")
}

func (w *Writer) keyEnergy(p runner.PhaseState) string {
	ph := w.plan.Phase(p.ID)
	_, metric, step := keyOf(ph, p, nil)
	if ph == nil || step < 0 || !IsTokenRate(metric) {
		return ""
	}
	s := p.Steps[step]
	if _, _, j, _, _, ok := w.tokenEnergy(p, s, s.Results[len(s.Results)-1]); ok {
		return FormatNumber(j) + " J/token"
	}
	return ""
}
