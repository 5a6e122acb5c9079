package report

import (
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
)

// TestTopologyMatrix: the conditions draw this host's GPUs GPU × GPU, the
// link in nvidia-smi topo's words and P2P read/write, why a ✗ is; a
// change of a link between two campaigns is said.
func TestTopologyMatrix(t *testing.T) {
	peer := func(i int, link, w string) gpu.Peer { return gpu.Peer{Index: i, Link: link, Read: "ok", Write: w} }
	gs := []gpu.Conditions{
		{Index: 0, Name: "NVIDIA RTX PRO 6000", BAR1MiB: 131072, Peers: []gpu.Peer{peer(1, "one PCIe switch", "ok"), peer(2, "across CPU sockets", "the chipset does not support it")}},
		{Index: 1, Name: "NVIDIA RTX PRO 6000", Peers: []gpu.Peer{peer(0, "one PCIe switch", "ok"), peer(2, "across CPU sockets", "ok")}},
		{Index: 2, Name: "NVIDIA RTX PRO 6000", Peers: []gpu.Peer{peer(0, "across CPU sockets", "ok"), peer(1, "across CPU sockets", "ok")}},
	}
	m := topologyMatrix(gs)
	for _, want := range []string{
		"| | GPU 0 | GPU 1 | GPU 2 | BAR1 |",
		"| GPU 0 | — | PIX ✓/✓ | SYS ✓/✗ | 131072 MiB |",
		"| GPU 2 | SYS ✓/✓ | SYS ✓/✓ | — | — |",
		"✗: the chipset does not support it",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("the matrix lacks %q:\n%s", want, m)
		}
	}
	if topologyMatrix(gs[:1]) != "" {
		t.Error("one GPU drew a matrix")
	}
	before := conditions.Conditions{GPUs: gs}
	after := conditions.Conditions{GPUs: append([]gpu.Conditions(nil), gs...)}
	after.GPUs[0].Peers = []gpu.Peer{peer(1, "one PCIe switch", "ok"), peer(2, "across CPU sockets", "ok")}
	var said []string
	for _, c := range conditions.Diff(before, after) {
		said = append(said, c.String())
	}
	if !strings.Contains(strings.Join(said, "|"), "GPU 0 link to GPU 2") {
		t.Errorf("a link's P2P write turning on is not said: %q", said)
	}
}
