package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner"
)

// bar draws frac (0..1) in width cells; frac < 0 draws an empty track.
func (m *model) bar(frac float64, width int) string {
	if width <= 0 {
		return ""
	}
	n := 0
	if frac > 0 {
		n = int(math.Round(min(frac, 1) * float64(width)))
	}
	return m.st.barFull.Render(strings.Repeat(m.gl.full, n)) + m.st.barEmpty.Render(strings.Repeat(m.gl.empty, width-n))
}

// spark draws the last width utilization points (0..100) as a sparkline.
func (m *model) spark(vals []float32, width int) string {
	if len(vals) > width {
		vals = vals[len(vals)-width:]
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", width-len(vals)))
	top := len(m.gl.spark) - 1
	for _, v := range vals {
		if v < 0 {
			b.WriteString("?")
			continue
		}
		i := int(math.Ceil(float64(min(v, 100)) / 100 * float64(top)))
		b.WriteString(m.gl.spark[i])
	}
	return b.String()
}

func dur(d time.Duration) string { return format.Duration(d) }

// etaText is runner's ETA text, marked as an ETA where it is a time.
func etaText(e runner.ETA) string {
	if e.Known && e.Over == 0 {
		return "ETA " + e.Text()
	}
	return e.Text()
}

func gib(b float64) string { return fmt.Sprintf("%.0f", b/(1<<30)) }
