package gpu

import "testing"

// TestPowerCapIsOneRule: the SW power cap is trouble only where the
// power limit was lowered, for a summary's doubts and a reading's mark on
// the GPU chart alike (the chart never marked it; the doubts did).
func TestPowerCapIsOneRule(t *testing.T) {
	var capBit uint16
	for b, n := range throttleNames {
		if n.name == "SW power cap" {
			capBit = 1 << b
		}
	}
	p := Point{Throttle: capBit}
	lowered := Conditions{PowerLimitW: 500, PowerDefault: 700}
	full := Conditions{PowerLimitW: 700, PowerDefault: 700}
	s := Summary{Device: Device{Index: 0}, Throttle: []string{"SW power cap"}}
	if p.Troubled(false) || len(s.Doubts(full, true)) != 0 {
		t.Errorf("at the default limit: troubled %v, doubts %q; want neither", p.Troubled(false), s.Doubts(full, true))
	}
	if !p.Troubled(lowered.Capped()) || len(s.Doubts(lowered, true)) != 1 {
		t.Errorf("a lowered limit: troubled %v, doubts %q; want both", p.Troubled(true), s.Doubts(lowered, true))
	}
}
