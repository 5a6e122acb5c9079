package slurmtest

import (
	"strings"
	"testing"
)

// TestNodes: the multi-node cluster comes up with each node its own host
// and fake GPUs, and the host's namespace cannot reach its range.
func TestNodes(t *testing.T) {
	c := StartNodes(t, 3, 8)
	if err := c.Unreachable(); err != nil {
		t.Fatal(err)
	}
	out := c.Run(t, "srun", "-N3", "--gpus-per-node=8", "sh", "-c", `echo $(hostname) $SLURM_GPUS_ON_NODE`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for _, want := range []string{"n1 8", "n2 8", "n3 8"} {
		if !seen[want] {
			t.Errorf("srun -N3 said %q; want a line %q", out, want)
		}
	}
	if out, err := c.Login("getent", "hosts", "n2").Output(); err != nil || !strings.Contains(string(out), c.Addr("n2")) {
		t.Errorf("n2 from the login node: %q %v; want %s", out, err, c.Addr("n2"))
	}
}
