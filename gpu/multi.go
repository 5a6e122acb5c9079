package gpu

import (
	"errors"
	"strings"
	"time"
)

// Multi reads several sources as one fleet: this machine's GPUs through
// NVML and other nodes' through dcgm-exporter, for instance. Devices keep
// their sources' order; a device is told apart by its host.
type Multi []Source

// Inventory joins the parts' inventories. Driver and CUDA are this
// machine's when it has GPUs, else the remote hosts'.
func (m Multi) Inventory() Inventory {
	var inv Inventory
	var names, whys []string
	for _, src := range m {
		part := src.Inventory()
		names = append(names, part.Source)
		inv.Devices = append(inv.Devices, part.Devices...)
		if inv.Driver == "" {
			inv.Driver, inv.CUDA = part.Driver, part.CUDA
		}
		if len(part.Devices) == 0 && part.Why != "" {
			whys = append(whys, part.Source+": "+part.Why)
		}
	}
	inv.Source = strings.Join(names, "+")
	if len(inv.Devices) == 0 {
		inv.Why = strings.Join(whys, "; ")
	}
	return inv
}

// Sample reads every part. A part with remote hosts bounds its own wait.
func (m Multi) Sample(now time.Time) []Sample {
	var out []Sample
	for _, src := range m {
		out = append(out, src.Sample(now)...)
	}
	return out
}

// Hosts lists the remote hosts of every part that has some.
func (m Multi) Hosts() []HostState {
	var out []HostState
	for _, src := range m {
		if h, ok := src.(Hosts); ok {
			out = append(out, h.Hosts()...)
		}
	}
	return out
}

// Close closes every part.
func (m Multi) Close() error {
	var errs []error
	for _, src := range m {
		errs = append(errs, src.Close())
	}
	return errors.Join(errs...)
}

// EnergyNow reads the counters of every part that can read them on
// demand (EnergyMeter); the others' devices are absent.
func (m Multi) EnergyNow() map[DeviceID]float64 {
	out := map[DeviceID]float64{}
	for _, src := range m {
		if em, ok := src.(EnergyMeter); ok {
			for id, v := range em.EnergyNow() {
				out[id] = v
			}
		}
	}
	return out
}
