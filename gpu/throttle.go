package gpu

// throttleNames decodes NVML's clock-event reason bits into words a person
// reads; idle and "none" are not throttling.
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{0x2, "app clocks"},
	{0x4, "SW power cap"},
	{0x8, "HW slowdown"},
	{0x10, "sync boost"},
	{0x20, "SW thermal"},
	{0x40, "HW thermal"},
	{0x80, "power brake"},
	{0x100, "display clock"},
	{0x200, "board limit"},
	{0x400, "reliability"},
}

// DecodeThrottle names the reasons set in an NVML clock-event bitmask.
func DecodeThrottle(bits uint64) []string {
	var out []string
	for _, t := range throttleNames {
		if bits&t.bit != 0 {
			out = append(out, t.name)
		}
	}
	return out
}
