package gpu

import (
	"testing"
	"time"
)

// Rounds fall on whole multiples of the interval by the clock, where the
// runner's poll and the screen's clock fall too.
func TestRoundsFallOnTheInterval(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct{ now, every, want time.Duration }{
		{300 * time.Millisecond, time.Second, 700 * time.Millisecond},
		{0, time.Second, time.Second},
		{1300 * time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond},
	} {
		if got := untilNext(at.Add(c.now), c.every); got != c.want {
			t.Errorf("at +%s every %s: next round in %s; want %s", c.now, c.every, got, c.want)
		}
	}
}
