package runner

import (
	"testing"

	"github.com/greenlight-run/greenlight/runner/state"
)

// TestSkipReadBackTyped: a step end's skip is read back by its type; a
// journal written before skips were typed has only the words, and the one
// skip it journaled with a step's end (a point skipped by you) reads back
// as that.
func TestSkipReadBackTyped(t *testing.T) {
	for _, c := range []struct {
		rec  record
		want state.SkipBy
	}{
		{record{Status: Skipped, Skip: state.SkipByYou, Reason: "whatever it says"}, state.SkipByYou},
		{record{Status: Skipped, Skip: state.SkipNotProbed}, state.SkipNotProbed},
		{record{Status: Skipped, Reason: whyByYou + "m=4)"}, state.SkipByYou}, // an older journal
		{record{Status: Skipped, Reason: "by you"}, ""},                       // the phase skipped whole
		{record{Status: Failed, Reason: whyByYou + "m=4)"}, ""},
	} {
		if got := c.rec.skipBy(); got != c.want {
			t.Errorf("%+v: read back %q; want %q", c.rec, got, c.want)
		}
	}
}
