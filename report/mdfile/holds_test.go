package mdfile

import (
	"strings"
	"testing"
	"time"
)

// TestHeldSaysALongHoldPlainly: a hold is said as the editor that holds
// the file; past HoldSaid, that the file lags the results.
func TestHeldSaysALongHoldPlainly(t *testing.T) {
	h := &Held{Path: "/x/r.md", By: Holder{Editor: "vim", PID: 42, Since: time.Now()}}
	if got := h.Error(); got != "r.md is open in vim (pid 42): written when you leave it" {
		t.Errorf("a fresh hold: %q", got)
	}
	h.By.Since = time.Now().Add(-HoldSaid - time.Second)
	if got := h.Error(); !strings.Contains(got, "has been open in vim (pid 42) for over 10m0s: it lags the results") {
		t.Errorf("a long hold: %q", got)
	}
}
