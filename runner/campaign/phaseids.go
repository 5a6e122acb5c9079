package campaign

// Naming a phase from the command line: an id of the plan, or a phase as
// the file writes it that runs once per point of a swept service.

import (
	"fmt"
	"strings"
)

// PhaseIDError names a phase id that is not in the plan, with the nearest
// one and the list.
type PhaseIDError struct {
	ID, Near string
	Known    []string
	Copies   []string // id is a phase copied per point of a swept service: its copies
}

func (e *PhaseIDError) Error() string {
	if len(e.Copies) > 0 {
		return fmt.Sprintf("phase %q runs once per point of a swept service, as %s: name one of them", e.ID, strings.Join(e.Copies, ", "))
	}
	msg := fmt.Sprintf("no phase %q in this campaign", e.ID)
	if e.Near != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Near)
	}
	return msg + " (phases: " + strings.Join(e.Known, ", ") + ")"
}

// Named are the phases id stands for: itself, or the copies of a phase
// copied per point of a swept service (decode: decode.64.2048, ...); nil
// for none.
func (p *Plan) Named(id string) []string {
	if p.Phase(id) != nil {
		return []string{id}
	}
	var out []string
	for _, ph := range p.Phases {
		if ph.Point != nil && ph.Point.Phase == id {
			out = append(out, ph.ID)
		}
	}
	return out
}

// CheckPhaseID returns a *PhaseIDError unless id names a phase of the plan.
func (p *Plan) CheckPhaseID(id string) error {
	if p.Phase(id) != nil {
		return nil
	}
	e := &PhaseIDError{ID: id}
	best := 3
	for _, ph := range p.Phases {
		e.Known = append(e.Known, ph.ID)
		if ph.Point != nil && ph.Point.Phase == id {
			e.Copies = append(e.Copies, ph.ID)
		}
		if d := editDistance(strings.ToLower(id), strings.ToLower(ph.ID)); d < best {
			e.Near, best = ph.ID, d
		}
		if pt := ph.Point; pt != nil { // decod: decode, as the file writes it
			if d := editDistance(strings.ToLower(id), strings.ToLower(pt.Phase)); d < best {
				e.Near, best = pt.Phase, d
			}
		}
	}
	return e
}
