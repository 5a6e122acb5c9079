package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestApproveAPhaseRunPerServicePoint: --approve names a phase as the
// file writes it; a phase copied per point of a swept service opens every
// copy's gate. A name that is no phase is refused with the nearest one.
func TestApproveAPhaseRunPerServicePoint(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(`name: a
phases:
  - id: serve
    sweep: {seqs: [64, 256]}
    service:
      run: |
        serve ${seqs}
      ready: {log: up}
  - id: decode
    needs: [serve]
    gate: manual
    steps:
      - run: |
          true
`))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := ApproveList(plan, "decode, serve.256")
	if err != nil || !slices.Equal(ids, []string{"decode.64", "decode.256", "serve.256"}) {
		t.Errorf("ApproveList = %v, %v", ids, err)
	}
	if _, err := ApproveList(plan, "decod"); err == nil || !strings.Contains(err.Error(), `did you mean`) {
		t.Errorf("a typo: %v", err)
	}
}
