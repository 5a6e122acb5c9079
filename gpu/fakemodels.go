package gpu

import (
	"slices"
	"strings"
)

// FakeModel is a board the fake fleet stands in for: its name as NVML
// gives it, its memory, its default power limit and its clocks, so a
// record made for an RTX PRO 6000 box says RTX PRO 6000, with its figures.
type FakeModel struct {
	Key      string  // as --gpu fake:8:KEY names it
	Name     string  // as nvidia-smi and NVML give it
	Mem      float64 // bytes, as NVML gives the total
	PowerW   float64 // default power limit
	SMMHz    float64 // the SM clock under load (its boost)
	MemMHz   float64 // the memory clock NVML reports
	IdleSMHz float64 // the SM clock at rest
}

const mib = 1 << 20

// FakeModels are the boards the fake fleet knows, with the vendor's
// documented figures (datasheets: memory, power, boost clock; the memory
// clock as NVML reports it for that memory's data rate). The first is the
// default.
var FakeModels = []FakeModel{
	{"h200", "NVIDIA H200", 141 << 30, 700, 1980, 3201, 345},
	{"h100", "NVIDIA H100 80GB HBM3", 81559 * mib, 700, 1980, 2619, 345},
	{"a100", "NVIDIA A100-SXM4-80GB", 81920 * mib, 400, 1410, 1593, 210},
	{"l40s", "NVIDIA L40S", 46068 * mib, 350, 2520, 9001, 210},
	{"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887 * mib, 600, 2617, 14001, 180},
}

// FakeModelOf is the model key names ("" is the default, the H200);
// false when there is none of that name.
func FakeModelOf(key string) (FakeModel, bool) {
	if key == "" {
		return FakeModels[0], true
	}
	i := slices.IndexFunc(FakeModels, func(m FakeModel) bool { return m.Key == strings.ToLower(key) })
	if i < 0 {
		return FakeModel{}, false
	}
	return FakeModels[i], true
}

// FakeModelKeys are the names a fake fleet's model may have.
func FakeModelKeys() []string {
	var out []string
	for _, m := range FakeModels {
		out = append(out, m.Key)
	}
	return out
}
