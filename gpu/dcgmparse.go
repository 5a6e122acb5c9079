package gpu

// Reading a dcgm-exporter's Prometheus text into samples: the fields
// greenlight shows, their units and sentinels.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// dcgmValue turns an exported number into a Metric, sentinels into n/a.
func dcgmValue(v, scale float64) Metric {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return na("not a number")
	case v >= dcgmInt64Blank:
		return na("blank (DCGM)")
	case v >= dcgmFP64Blank && v < dcgmFP64Blank+16:
		return na(sentinelText(int(v - dcgmFP64Blank)))
	case v >= dcgmInt32Blank && v <= math.MaxInt32:
		return na(sentinelText(int(v - dcgmInt32Blank)))
	case v >= dcgmFP64Blank:
		return na("blank (DCGM)")
	}
	return ok(v * scale)
}

func sentinelText(off int) string {
	if off >= 0 && off < len(sentinelWhy) {
		return sentinelWhy[off] + " (DCGM)"
	}
	return "blank (DCGM)"
}

// ParseDCGM reads dcgm-exporter's Prometheus text with the Prometheus
// project's own parser and maps its fields onto Samples, one per GPU in
// gpu order. host names the node when the exporter's Hostname label is
// missing. A field the exporter does not export is n/a, "not exported".
func ParseDCGM(r io.Reader, host string) ([]dcgmSample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("malformed metrics: %v", err)
	}
	byGPU := map[int]*dcgmSample{}
	get := func(m *dto.Metric) *dcgmSample {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		idx, err := strconv.Atoi(labels["gpu"])
		if err != nil || idx < 0 {
			return nil
		}
		s := byGPU[idx]
		if s == nil {
			name := labels["Hostname"]
			if name == "" {
				name = host
			}
			s = &dcgmSample{Sample: newRemoteSample(Device{Index: idx, Name: labels["modelName"], UUID: labels["UUID"], Host: name})}
			s.driver = labels["DCGM_FI_DRIVER_VERSION"]
			byGPU[idx] = s
		}
		if labels["GPU_I_ID"] != "" {
			s.MIG = "on" // a MIG instance's series: the parent's row says MIG is on
			return nil
		}
		return s
	}
	for name, fam := range fams {
		field, known := dcgmFields[name]
		for _, m := range fam.GetMetric() {
			s := get(m)
			if s == nil || !known {
				continue
			}
			v := metricValue(m)
			switch field {
			case fUtil:
				s.Util = dcgmValue(v, 1)
			case fMemUtil:
				s.MemUtil = dcgmValue(v, 1)
			case fTemp:
				s.Temp = dcgmValue(v, 1)
			case fPower:
				s.Power = dcgmValue(v, 1)
			case fPowerLimit:
				s.PowerLimit = dcgmValue(v, 1)
			case fSMClock:
				s.SMClock = dcgmValue(v, 1)
			case fMemClock:
				s.MemClock = dcgmValue(v, 1)
			case fPCIeTx:
				s.PCIeTx = dcgmValue(v, 1024) // KB/s
			case fPCIeRx:
				s.PCIeRx = dcgmValue(v, 1024)
			case fXID:
				s.XID = dcgmValue(v, 1)
			case fECC:
				s.ECCErrors = dcgmValue(v, 1)
			case fThrottle:
				if t := dcgmValue(v, 1); t.OK {
					s.Throttle = DecodeThrottle(uint64(t.V))
				}
			case fFBUsed:
				s.MemUsed = dcgmValue(v, 1<<20) // MiB
			case fFBFree:
				s.fbFree = dcgmValue(v, 1<<20)
			case fFBReserved:
				s.fbReserved = dcgmValue(v, 1<<20)
			case fFBTotal:
				s.fbTotal = dcgmValue(v, 1<<20)
			case fEnergy:
				s.Energy = dcgmValue(v, 1)
			}
		}
	}
	out := make([]dcgmSample, 0, len(byGPU))
	for _, s := range byGPU {
		// NVML's total counts what the driver reserves: used+free+reserved.
		switch {
		case s.fbTotal.OK:
			s.Device.MemTotal = uint64(s.fbTotal.V)
		case s.MemUsed.OK && s.fbFree.OK:
			s.Device.MemTotal = uint64(s.MemUsed.V + s.fbFree.V + max(0, s.fbReserved.V))
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b dcgmSample) int { return a.Device.Index - b.Device.Index })
	return out, nil
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// newRemoteSample is a device with every reading n/a until its exporter
// gives one.
func newRemoteSample(d Device) Sample {
	no := na("not exported")
	return Sample{Device: d, Util: no, MemUtil: no, MemUsed: no, Temp: no, Power: no, PowerLimit: no,
		SMClock: no, MemClock: no, PCIeRx: no, PCIeTx: no, ECCErrors: no, XID: no, Energy: no, MIG: "n/a",
		ProcsWhy: "processes on other nodes are not listed by dcgm-exporter"}
}

type dcgmField int

const (
	fUtil dcgmField = iota
	fMemUtil
	fTemp
	fPower
	fPowerLimit
	fSMClock
	fMemClock
	fPCIeTx
	fPCIeRx
	fXID
	fECC
	fThrottle
	fFBUsed
	fFBFree
	fFBReserved
	fFBTotal
	fEnergy
)

// dcgmFields maps exporter series onto Sample fields. Anything else an
// exporter serves is ignored.
var dcgmFields = map[string]dcgmField{
	"DCGM_FI_DEV_GPU_UTIL":                 fUtil,
	"DCGM_FI_DEV_MEM_COPY_UTIL":            fMemUtil,
	"DCGM_FI_DEV_GPU_TEMP":                 fTemp,
	"DCGM_FI_DEV_POWER_USAGE":              fPower,
	"DCGM_FI_DEV_POWER_MGMT_LIMIT":         fPowerLimit,
	"DCGM_FI_DEV_SM_CLOCK":                 fSMClock,
	"DCGM_FI_DEV_MEM_CLOCK":                fMemClock,
	"DCGM_FI_DEV_PCIE_TX_THROUGHPUT":       fPCIeTx,
	"DCGM_FI_DEV_PCIE_RX_THROUGHPUT":       fPCIeRx,
	"DCGM_FI_DEV_XID_ERRORS":               fXID,
	"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":        fECC,
	"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS":   fThrottle,
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS":     fThrottle,
	"DCGM_FI_DEV_FB_USED":                  fFBUsed,
	"DCGM_FI_DEV_FB_FREE":                  fFBFree,
	"DCGM_FI_DEV_FB_RESERVED":              fFBReserved,
	"DCGM_FI_DEV_FB_TOTAL":                 fFBTotal,
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": fEnergy, // mJ since the driver loaded
}
