package gpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// benignThrottle are clock-event reasons that are no sign of trouble: the
// clocks a user set, boost held in sync, the display clock. "SW power
// cap" is a saturated GPU's steady state (an H200's large GEMMs run at
// their 700 W): it is a doubt only where the power limit was lowered
// below the board's default.
var benignThrottle = []string{"app clocks", "sync boost", "display clock"}

// ThrottleTrouble says a clock-event reason is trouble: every reason but
// the benign ones, and "SW power cap" only where capped (the power limit
// lowered below the board's default). The one rule, for a summary's
// doubts and a reading's mark on the GPU chart.
func ThrottleTrouble(reason string, capped bool) bool {
	switch {
	case slices.Contains(benignThrottle, reason):
		return false
	case reason == "SW power cap":
		return capped
	}
	return true
}

// Doubts are why work measured on the GPU over the summary's window is
// doubtful, one reason a line: a throttle that is trouble, a process not
// of the campaign, an XID, an uncorrected ECC error, the GPU lost. cond is
// its setup as last read (to tell a lowered power cap); ok false when
// none was read. nil when nothing was wrong.
func (s Summary) Doubts(cond Conditions, ok bool) []string {
	label := s.Device.Label()
	var out, bad []string
	capped := ok && cond.Capped()
	for _, t := range s.Throttle {
		switch {
		case !ThrottleTrouble(t, capped):
		case t == "SW power cap":
			bad = append(bad, fmt.Sprintf("SW power cap at %.0f W, below its default %.0f W", cond.PowerLimitW, cond.PowerDefault))
		default:
			bad = append(bad, t)
		}
	}
	if len(bad) > 0 {
		out = append(out, fmt.Sprintf("GPU %s throttled (%s)", label, strings.Join(bad, ", ")))
	}
	for _, f := range s.Foreign {
		name := f.Name
		if name == "" {
			name = "n/a"
		}
		out = append(out, fmt.Sprintf("a process not of this campaign was on GPU %s (pid %d %s)", label, f.PID, name))
	}
	if len(s.XIDs) > 0 {
		xids := make([]string, len(s.XIDs))
		for i, x := range s.XIDs {
			xids[i] = strconv.Itoa(x)
		}
		out = append(out, fmt.Sprintf("GPU %s reported XID %s", label, strings.Join(xids, ", ")))
	}
	if s.ECCNew > 0 {
		out = append(out, fmt.Sprintf("GPU %s counted %d uncorrected ECC error(s)", label, s.ECCNew))
	}
	if s.Lost {
		out = append(out, fmt.Sprintf("GPU %s stopped answering", label))
	}
	return out
}
