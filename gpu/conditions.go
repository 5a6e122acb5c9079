package gpu

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Conditions is how a device is set up, as far as its source can say: what
// a comparison of two campaigns must know to explain a difference (a
// power cap, application clocks, a link at half width). A field the
// source cannot read is empty or zero.
type Conditions struct {
	Index        int     `json:"index"`
	Host         string  `json:"host,omitempty"`
	Name         string  `json:"name,omitempty"`
	UUID         string  `json:"uuid,omitempty"`
	VBIOS        string  `json:"vbios,omitempty"`
	PowerLimitW  float64 `json:"power_limit_w,omitempty"`   // enforced
	PowerDefault float64 `json:"power_default_w,omitempty"` // the board's default limit
	AppClockSM   int     `json:"app_clock_sm_mhz,omitempty"`
	AppClockMem  int     `json:"app_clock_mem_mhz,omitempty"`
	ECC          string  `json:"ecc,omitempty"`         // on, off
	Persistence  string  `json:"persistence,omitempty"` // on, off
	MIG          string  `json:"mig,omitempty"`         // on, off
	PCIeGen      int     `json:"pcie_gen,omitempty"`    // current link
	PCIeWidth    int     `json:"pcie_width,omitempty"`
	PCIeMaxGen   int     `json:"pcie_max_gen,omitempty"`
	PCIeMaxWidth int     `json:"pcie_max_width,omitempty"`
	BAR1MiB      int     `json:"bar1_mib,omitempty"` // the BAR1 aperture: a peer's window into its memory
	// Peers are its links to each other GPU of its host: what joins them
	// (NVML's common ancestor) and whether peer reads and writes go
	// directly (NVML's P2P status).
	Peers []Peer `json:"peers,omitempty"`
}

// Peer is one GPU's link to another of its host.
type Peer struct {
	Index  int    `json:"index"`
	Link   string `json:"link"`             // NVLink, same board, one PCIe switch, several PCIe switches, a host bridge, one CPU, across CPU sockets
	Read   string `json:"p2p_read"`         // ok, or why not
	Write  string `json:"p2p_write"`        // ok, or why not
	NVLink string `json:"nvlink,omitempty"` // ok where P2P over NVLink is
}

// Capped says the enforced power limit is below the board's default:
// someone lowered it, and "SW power cap" is then a condition of the run,
// not a saturated GPU's steady state.
func (c Conditions) Capped() bool {
	return c.PowerDefault > 0 && c.PowerLimitW > 0 && c.PowerLimitW < c.PowerDefault
}

// Label names the device as the record does: "3", or "node2:3".
func (c Conditions) Label() string {
	if c.Host == "" {
		return fmt.Sprint(c.Index)
	}
	return fmt.Sprintf("%s:%d", c.Host, c.Index)
}

// Describer is a Source that can say how its devices are set up. Only the
// Sampler calls it, from its goroutine, as it does Sample.
type Describer interface {
	Describe() []Conditions
}

// Describe reads each device's setup; a device that fails is listed with
// what its inventory knows.
func (n *NVML) Describe() []Conditions {
	out := make([]Conditions, len(n.devs))
	for i, d := range n.devs {
		dev := n.inv.Devices[i]
		c := Conditions{Index: dev.Index, Name: dev.Name, UUID: dev.UUID}
		if d != nil {
			n.describeOne(d, &c)
			c.BAR1MiB = bar1MiB(d)
		}
		out[i] = c
	}
	n.describePeers(out)
	return out
}

func (n *NVML) describeOne(d nvml.Device, c *Conditions) {
	defer func() { recover() }() // a mock or a driver without a symbol: keep what was read
	if v, ret := d.GetVbiosVersion(); ret == nvml.SUCCESS {
		c.VBIOS = v
	}
	if v, ret := d.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
		c.PowerLimitW = float64(v) / 1000
	}
	if v, ret := d.GetPowerManagementDefaultLimit(); ret == nvml.SUCCESS {
		c.PowerDefault = float64(v) / 1000
	}
	if v, ret := d.GetApplicationsClock(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		c.AppClockSM = int(v)
	}
	if v, ret := d.GetApplicationsClock(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
		c.AppClockMem = int(v)
	}
	onOff := func(on bool) string {
		if on {
			return "on"
		}
		return "off"
	}
	if cur, _, ret := d.GetEccMode(); ret == nvml.SUCCESS {
		c.ECC = onOff(cur == nvml.FEATURE_ENABLED)
	}
	if v, ret := d.GetPersistenceMode(); ret == nvml.SUCCESS {
		c.Persistence = onOff(v == nvml.FEATURE_ENABLED)
	}
	if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS {
		c.MIG = onOff(cur == nvml.DEVICE_MIG_ENABLE)
	}
	if v, ret := d.GetCurrPcieLinkGeneration(); ret == nvml.SUCCESS {
		c.PCIeGen = v
	}
	if v, ret := d.GetCurrPcieLinkWidth(); ret == nvml.SUCCESS {
		c.PCIeWidth = v
	}
	if v, ret := d.GetMaxPcieLinkGeneration(); ret == nvml.SUCCESS {
		c.PCIeMaxGen = v
	}
	if v, ret := d.GetMaxPcieLinkWidth(); ret == nvml.SUCCESS {
		c.PCIeMaxWidth = v
	}
}

// bar1MiB is the device's BAR1 aperture, 0 when not known.
func bar1MiB(d nvml.Device) (mib int) {
	defer func() { recover() }() // a mock or a driver without the call
	if m, ret := d.GetBAR1MemoryInfo(); ret == nvml.SUCCESS {
		return int(m.Bar1Total >> 20)
	}
	return 0
}

// describePeers reads each pair of devices' link and P2P status.
func (n *NVML) describePeers(out []Conditions) {
	for i, a := range n.devs {
		for j, b := range n.devs {
			if i == j || a == nil || b == nil {
				continue
			}
			if p, ok := peerOf(a, b, n.inv.Devices[j].Index); ok {
				out[i].Peers = append(out[i].Peers, p)
			}
		}
	}
}

func peerOf(a, b nvml.Device, index int) (p Peer, ok bool) {
	defer func() {
		if recover() != nil { // a mock or a driver without the call
			ok = false
		}
	}()
	p.Index = index
	if lvl, ret := a.GetTopologyCommonAncestor(b); ret == nvml.SUCCESS {
		p.Link = topologyWords[lvl]
	} else {
		p.Link = "not known: " + explain(ret)
	}
	status := func(idx nvml.GpuP2PCapsIndex) string {
		st, ret := a.GetP2PStatus(b, idx)
		if ret != nvml.SUCCESS {
			return "not known: " + explain(ret)
		}
		return p2pWords[st]
	}
	p.Read, p.Write = status(nvml.P2P_CAPS_INDEX_READ), status(nvml.P2P_CAPS_INDEX_WRITE)
	if nv := status(nvml.P2P_CAPS_INDEX_NVLINK); nv == "ok" {
		p.NVLink, p.Link = "ok", "NVLink"
	}
	return p, true
}

// topologyWords are NVML's common ancestors of two GPUs, in words.
var topologyWords = map[nvml.GpuTopologyLevel]string{
	nvml.TOPOLOGY_INTERNAL:   "same board",
	nvml.TOPOLOGY_SINGLE:     "one PCIe switch",
	nvml.TOPOLOGY_MULTIPLE:   "several PCIe switches",
	nvml.TOPOLOGY_HOSTBRIDGE: "a host bridge",
	nvml.TOPOLOGY_NODE:       "one CPU",
	nvml.TOPOLOGY_SYSTEM:     "across CPU sockets",
}

// p2pWords are NVML's P2P statuses, in words.
var p2pWords = map[nvml.GpuP2PStatus]string{
	nvml.P2P_STATUS_OK:                         "ok",
	nvml.P2P_STATUS_CHIPSET_NOT_SUPPORED:       "the chipset does not support it",
	nvml.P2P_STATUS_GPU_NOT_SUPPORTED:          "the GPU does not support it",
	nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED: "the topology does not support it",
	nvml.P2P_STATUS_DISABLED_BY_REGKEY:         "disabled by a registry key",
	nvml.P2P_STATUS_NOT_SUPPORTED:              "not supported",
	nvml.P2P_STATUS_UNKNOWN:                    "unknown",
}

// Describe gives the fake fleet an H200's setup; SetPowerLimit changes it.
func (f *Fake) Describe() []Conditions {
	out := make([]Conditions, f.n)
	for i := range f.n {
		d := f.device(i)
		out[i] = Conditions{Index: i, Name: d.Name, UUID: d.UUID, VBIOS: "96.00.AF.00.01 (fake)", PowerLimitW: f.powerLimit(i), PowerDefault: 700,
			AppClockSM: 1980, AppClockMem: 3201, ECC: "on", Persistence: "on", MIG: "off",
			PCIeGen: 5, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16}
	}
	return out
}

// Multi describes the devices of each source that can.
func (m Multi) Describe() []Conditions {
	var out []Conditions
	for _, s := range m {
		if d, ok := s.(Describer); ok {
			out = append(out, d.Describe()...)
		}
	}
	return out
}

// describeFresh is how long a description is taken as current: it is
// read when asked for (a phase's start, the record's header), not every
// round. On an H200 its clocks' calls cost a fifth of an idle runner's CPU
// when it was read every 5 s.
const describeFresh = time.Second

// Conditions is how each device is set up, read now (or within the last
// second), or, for a source that cannot describe its devices
// (dcgm-exporter), what its inventory and last readings say.
func (s *Sampler) Conditions() []Conditions {
	if d, ok := s.src.(Describer); ok {
		s.mu.Lock()
		stale := s.now().Sub(s.descAt) >= describeFresh
		s.mu.Unlock()
		if stale {
			desc := d.Describe() // outside the lock: a round goes on meanwhile
			s.mu.Lock()
			s.desc, s.descAt = desc, s.now()
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := map[DeviceID]Conditions{}
	for _, c := range s.desc {
		byID[DeviceID{c.Host, c.Index}] = c
	}
	var out []Conditions
	for _, d := range s.inv.Devices {
		c, ok := byID[d.ID()]
		if !ok {
			c = Conditions{Index: d.Index, Host: d.Host, Name: d.Name, UUID: d.UUID}
			for _, sm := range s.latest {
				if sm.Device.ID() == d.ID() {
					if sm.PowerLimit.OK {
						c.PowerLimitW = sm.PowerLimit.V
					}
					if sm.MIG != "n/a" {
						c.MIG = sm.MIG
					}
				}
			}
		}
		out = append(out, c)
	}
	return out
}
