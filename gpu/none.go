package gpu

import "time"

// None is a fleet of no devices: the campaign runs, the pane says why.
type None struct{ Why string }

func (n None) Inventory() Inventory      { return Inventory{Source: "none", Why: n.Why} }
func (n None) Sample(time.Time) []Sample { return nil }
func (n None) Close() error              { return nil }
