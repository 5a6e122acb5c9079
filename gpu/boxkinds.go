package gpu

// What boxes of a kind reach between their GPUs, as published: an
// all-reduce's bus bandwidth at large messages (nccl-tests'
// all_reduce_perf) and, where published, its small-message time. A box
// measured well below its kind is told what usually causes that and how
// to check each. Each figure names its source.

// BoxKind is a kind of box: a board, a GPU count and how they are joined.
type BoxKind struct {
	Board  string // a Boards key
	GPUs   int
	Joined string // "PCIe Gen5 through switches, NCCL tuned"
	// BusLo, BusHi: nccl-tests' all-reduce bus bandwidth, GB/s, at 1 MiB
	// and above.
	BusLo, BusHi float64
	// SmallUS: an all-reduce's time at 256 B to 64 KiB, µs; 0 when not
	// published.
	SmallUS float64
	Source  string
	// Untuned: the bus bandwidth such a box gives with NCCL's defaults,
	// where published (0 when not).
	Untuned float64
}

// BoxKinds are the kinds greenlight has figures for.
var BoxKinds = []BoxKind{
	{Board: "rtx-pro-6000", GPUs: 8, Joined: "PCIe Gen5 through switches (Broadcom PEX890xx), NCCL tuned",
		BusLo: 37.6, BusHi: 41.1, SmallUS: 24, Untuned: 22.2,
		Source: "voipmonitor/rtx6kpro, hardware/pcie-bandwidth.md and NCCL tuning (8× RTX PRO 6000 Server); flashinfer PR 4393"},
	{Board: "h100-pcie", GPUs: 8, Joined: "PCIe Gen5, no NVLink",
		BusLo: 35, BusHi: 45,
		Source: "Alaya New, \"NCCL-tests in practice\" (2026-05-06), reference busbw table"},
	{Board: "h100-sxm", GPUs: 8, Joined: "NVLink 4 through NVSwitch",
		BusLo: 460, BusHi: 480,
		Source: "Alaya New, \"NCCL-tests in practice\" (2026-05-06), reference busbw table"},
}

// KindOf is the kind of box of n GPUs of board, false when greenlight has
// no figures for it.
func KindOf(board string, n int) (BoxKind, bool) {
	for _, k := range BoxKinds {
		if k.Board == board && k.GPUs == n {
			return k, true
		}
	}
	return BoxKind{}, false
}

// BelowKind is the share of its kind's low figure under which a box is
// said to be well below its kind.
const BelowKind = 0.8

// BelowKindCauses are what usually holds a box's all-reduce below its
// kind, each with how to check it.
var BelowKindCauses = []string{
	"peer-to-peer off or through the host: NCCL_P2P_LEVEL / NCCL_P2P_DISABLE in the environment; NCCL_DEBUG=INFO says \"via P2P/IPC\" (good) or \"via SHM\" / \"via NET\"",
	"too few channels on PCIe: NCCL_MIN_NCHANNELS (NCCL_DEBUG=INFO prints the channels it built)",
	"the IOMMU translating every peer write: the kernel command line (iommu=pt, amd_iommu=on) and dmesg | grep -i iommu",
	"PCIe ACS forcing peer traffic up to the root complex: lspci -vvv | grep -i acsctl (SrcValid+ on the switch ports)",
	"a posted-write collapse behind the switches: nvbandwidth's device_to_device write against read per pair (a write/read ratio under 0.5 is it)",
	"GPUs on both sockets: nvidia-smi topo -m (SYS between pairs) and the NUMA node of each GPU",
}
