// Package gpu reads per-GPU telemetry from a Source (NVML, a deterministic
// fake fleet, or none) on a Sampler goroutine that keeps a bounded history.
//
// Promises: a metric a device cannot give is a Metric with OK false and the
// reason, never a zero posing as a value; a device that stops answering is
// reported Lost while the others go on; nothing here blocks its callers on
// the hardware, since only the Sampler's goroutine calls a Source.
//
// gpu imports nothing else of greenlight.
package gpu

import (
	"fmt"
	"strconv"
	"time"
)

// Metric is one reading, or why there is none.
type Metric struct {
	V   float64
	OK  bool
	Why string // when !OK: "not supported", "MIG slice", ...
}

// Format prints the value with f, or "n/a".
func (m Metric) Format(f string) string {
	if !m.OK {
		return "n/a"
	}
	return fmt.Sprintf(f, m.V)
}

func ok(v float64) Metric  { return Metric{V: v, OK: true} }
func na(why string) Metric { return Metric{Why: why} }

// Device is what does not change while a device is up.
type Device struct {
	Index    int
	Name     string
	UUID     string
	MemTotal uint64 // bytes
	Host     string // "" for this machine
}

// DeviceID names a device across hosts: index 0 of this machine and index
// 0 of another node are different devices.
type DeviceID struct {
	Host  string
	Index int
}

// ID is the device's identity.
func (d Device) ID() DeviceID { return DeviceID{d.Host, d.Index} }

// Label names a device: "3" on this machine, "node2:3" on another.
func (d Device) Label() string {
	if d.Host == "" {
		return strconv.Itoa(d.Index)
	}
	return d.Host + ":" + strconv.Itoa(d.Index)
}

// Inventory is the fleet as a source sees it, for the report's header.
type Inventory struct {
	Source  string // "nvml", "fake", "none", "dcgm", or several joined by "+"
	Driver  string
	CUDA    string
	Devices []Device
	Why     string // why there are no devices, when there are none
}

// Sample is one device at one moment.
type Sample struct {
	Time       time.Time
	Device     Device
	Lost       bool
	LostWhy    string
	Util       Metric // percent
	MemUtil    Metric // percent (memory controller busy)
	MemUsed    Metric // bytes
	Temp       Metric // °C
	Power      Metric // W
	PowerLimit Metric // W
	SMClock    Metric // MHz
	MemClock   Metric // MHz
	PCIeRx     Metric // bytes/s
	PCIeTx     Metric // bytes/s
	ECCErrors  Metric // uncorrected, volatile
	XID        Metric // the last XID error code (0: none); dcgm-exporter only
	// Energy is the device's total energy counter, mJ since the driver
	// loaded (NVML's nvmlDeviceGetTotalEnergyConsumption, DCGM's
	// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION): the energy between two
	// moments is the difference of two readings, exact where power
	// readings integrated at the sampling interval are not.
	Energy Metric
	// Fine are the driver's own samples taken since the last round (its
	// SM clock and utilization, several a second: nvmlDeviceGetSamples),
	// oldest first; nil where the source keeps none.
	Fine     []FineSample `json:"-"`
	MIG      string       // "on", "off" or "n/a"
	Throttle []string
	Procs    []Process
	ProcsWhy string // why the process list is empty or partial
}

// Process is a compute process on a device.
type Process struct {
	PID      int
	Name     string
	MemUsed  uint64 // bytes; 0 when the driver does not say
	Campaign bool   // in a session of one of the campaign's steps, or started by one (Phase)
	Phase    string // the campaign's phase whose step started it, when known (Sampler.SetOwner)
}

// FineSample is one of the driver's own samples: an SM clock (MHz) or a
// utilization (percent), at the driver's timestamp.
type FineSample struct {
	T     int64 // µs since the epoch
	Clock bool  // an SM clock in MHz; else a utilization in percent
	V     float32
}

// EnergyMeter is a source that reads its devices' energy counters on
// demand, from any goroutine, beside Sample: a step's energy is the
// difference of two reads at its very start and end, not of readings a
// second apart. A source without one (a remote exporter) has its
// counter read at each round, interpolated at a window's edges.
type EnergyMeter interface {
	EnergyNow() map[DeviceID]float64 // mJ; a device without a counter is absent
}

// Source reads devices. Only the Sampler calls it, from one goroutine.
type Source interface {
	Inventory() Inventory
	Sample(now time.Time) []Sample
	Close() error
}
