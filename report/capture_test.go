package report

import (
	"testing"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/trace"
)

// TestMissingRanks: the ranks a capture expected and never got are named
// by their number where the files say it, counted where they do not.
func TestMissingRanks(t *testing.T) {
	sums := func(ranks ...string) []*trace.Summary {
		var out []*trace.Summary
		for _, r := range ranks {
			out = append(out, &trace.Summary{Rank: r})
		}
		return out
	}
	c := &campaign.Capture{Ranks: 4, Inferred: "tensor-parallel 4 in serve"}
	for _, tc := range []struct {
		got  []*trace.Summary
		want string
	}{
		{sums("rank 0", "rank 1", "rank 2", "rank 3"), ""},
		{sums("rank 0", "rank 1", "rank 3"), "⚠ rank 2's trace never appeared: 3 of 4 summarised (tensor-parallel 4 in serve)"},
		{sums("rank 0", "rank 3"), "⚠ ranks 1, 2: their traces never appeared: 2 of 4 summarised (tensor-parallel 4 in serve)"},
		{sums("a.json", "b.json"), "⚠ 2 rank(s)' traces never appeared: 2 of 4 summarised (tensor-parallel 4 in serve)"},
	} {
		if got := missingRanks(c, tc.got); got != tc.want {
			t.Errorf("%d summaries: %q\nwant %q", len(tc.got), got, tc.want)
		}
	}
}
