package campaign

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseDuration accepts Go durations ("36m", "1h30m", "90s") and a bare
// number of seconds, which is what people type after reading a tool's output.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: write it like 90s, 36m or 1h30m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// parseSize accepts "50GiB", "500 MB", "1.5TiB" or a byte count.
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), 64)
			if err != nil || n < 0 {
				break
			}
			return uint64(n * u.mult), nil
		}
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("bad size %q: write it like 50GiB, 500MB or 1TiB", s)
}
