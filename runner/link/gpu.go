package link

// The GPU side of the runner's socket: each round of the runner's sampler
// as compact JSON (a few hundred bytes a second for eight GPUs), and on
// attach its inventory, hosts and recent history, so a window that
// attaches at hour five draws the same sparklines as one open since the
// start. It is part of the protocol: a change an older peer would misread
// gets a new Protocol number.

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
)

// GPURound is the sampler's side of a snapshot (inventory, hosts, history)
// or of one round (samples; the inventory when it changed).
type GPURound struct {
	Inv     *gpu.Inventory  `json:"inv,omitempty"` // on attach, and when it changed
	Hosts   []gpu.HostState `json:"hosts,omitempty"`
	Samples []wireSample    `json:"s,omitempty"`
	Hist    [][]gpuPoint    `json:"hist,omitempty"` // on attach: per device of Inv, oldest first
	// Servers are the services' own view (their /metrics), by service
	// phase id, while they are scraped.
	Servers map[string]*ServerLine `json:"servers,omitempty"`
}

// ServerLine is a service's /metrics now (metrics.Line on the wire); a
// series the server does not export is null.
type ServerLine struct {
	At          time.Time  `json:"at"`
	Running     *float64   `json:"running,omitempty"`
	Waiting     *float64   `json:"waiting,omitempty"`
	KV          *float64   `json:"kv,omitempty"`
	TokS        *float64   `json:"tok_s,omitempty"`
	Preemptions *float64   `json:"preemptions,omitempty"`
	History     []*float64 `json:"hist,omitempty"` // tokens/s per scrape, oldest first
	Err         string     `json:"err,omitempty"`
}

// wireSample is a gpu.Sample: the device by its place in the inventory,
// the metrics as one array (null: not available, with the reason in Why).
type wireSample struct {
	Dev      int               `json:"d"`
	T        int64             `json:"t"` // unix ms
	V        []wireNum         `json:"v"`
	Why      map[string]string `json:"why,omitempty"` // metric index -> reason
	Lost     bool              `json:"lost,omitempty"`
	LostWhy  string            `json:"lw,omitempty"`
	MIG      string            `json:"mig,omitempty"`
	Throttle []string          `json:"th,omitempty"`
	Procs    []gpu.Process     `json:"p,omitempty"`
	ProcsWhy string            `json:"pw,omitempty"`
	Same     bool              `json:"sp,omitempty"` // the processes are as in the last round
}

// wireNum is a metric: null when not available; integers, and large
// values (bytes, bytes/s) to the unit, exact; others to float32's
// precision (far finer than any gauge shows).
type wireNum struct {
	V  float64
	OK bool
}

func (n wireNum) MarshalJSON() ([]byte, error) {
	if !n.OK || math.IsNaN(n.V) || math.IsInf(n.V, 0) {
		return []byte("null"), nil
	}
	if (n.V == math.Trunc(n.V) || math.Abs(n.V) >= 1e5) && math.Abs(n.V) < 1<<53 {
		return strconv.AppendInt(nil, int64(math.Round(n.V)), 10), nil
	}
	return strconv.AppendFloat(nil, n.V, 'g', -1, 32), nil
}

func (n *wireNum) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = wireNum{}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*n = wireNum{v, err == nil}
	return err
}

func metrics(s *gpu.Sample) []*gpu.Metric {
	return []*gpu.Metric{&s.Util, &s.MemUtil, &s.MemUsed, &s.Temp, &s.Power, &s.PowerLimit,
		&s.SMClock, &s.MemClock, &s.PCIeRx, &s.PCIeTx, &s.ECCErrors, &s.XID}
}

// gpuPoint is a gpu.Point: [unix ms, util, mem GiB, power, temp, throttle
// bits, xid, lost, SM clock MHz]; the clock last, so that a round without
// it (an older runner's) reads as none (0).
type gpuPoint gpu.Point

func (p gpuPoint) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	b = strconv.AppendInt(b, p.T.UnixMilli(), 10)
	for _, v := range []float32{p.Util, p.MemUsed, p.Power, p.Temp} {
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
	}
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(p.Throttle), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(p.XID), 10)
	if p.Lost {
		b = append(b, ",1"...)
	} else {
		b = append(b, ",0"...)
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, float64(p.SMClock), 'g', -1, 32)
	return append(b, ']'), nil
}

func (p *gpuPoint) UnmarshalJSON(b []byte) error {
	var a [9]float64
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*p = gpuPoint{T: time.UnixMilli(int64(a[0])), Util: float32(a[1]), MemUsed: float32(a[2]), Power: float32(a[3]), Temp: float32(a[4]),
		Throttle: uint16(a[5]), XID: uint16(a[6]), Lost: a[7] != 0, SMClock: float32(a[8]),
		Energy: -1} // the counter stays with the runner: not read here
	return nil
}

// GPUEncoder turns the runner's rounds into wire rounds; it remembers the
// inventory it last sent, so an unchanged one is not sent again.
type GPUEncoder struct {
	lastInv   gpu.Inventory
	sent      bool
	lastProcs map[int]string // device -> its processes as last sent
}

func encodeSamples(inv gpu.Inventory, samples []gpu.Sample) []wireSample {
	pos := make(map[gpu.DeviceID]int, len(inv.Devices))
	for i, d := range inv.Devices {
		pos[d.ID()] = i
	}
	out := make([]wireSample, 0, len(samples))
	for i := range samples {
		s := &samples[i]
		dev, ok := pos[s.Device.ID()]
		if !ok {
			continue // not in the inventory yet: the next round has it
		}
		w := wireSample{Dev: dev, T: s.Time.UnixMilli(), Lost: s.Lost, LostWhy: s.LostWhy, MIG: s.MIG,
			Throttle: s.Throttle, Procs: s.Procs, ProcsWhy: s.ProcsWhy}
		for j, m := range metrics(s) {
			w.V = append(w.V, wireNum{m.V, m.OK})
			if !m.OK && m.Why != "" {
				if w.Why == nil {
					w.Why = map[string]string{}
				}
				w.Why[strconv.Itoa(j)] = m.Why
			}
		}
		out = append(out, w)
	}
	return out
}

// Round is one of the runner's rounds on the wire.
func (e *GPUEncoder) Round(inv gpu.Inventory, hosts []gpu.HostState, samples []gpu.Sample) *GPURound {
	w := GPURound{Hosts: hosts, Samples: encodeSamples(inv, samples)}
	if !e.sent || !reflect.DeepEqual(inv, e.lastInv) {
		w.Inv = &inv
		e.lastInv, e.sent = inv, true
		e.lastProcs = map[int]string{} // a new inventory: every list again
	}
	// A device's process list rarely changes: it travels when it does.
	for i := range w.Samples {
		ws := &w.Samples[i]
		b, _ := json.Marshal(struct {
			P  []gpu.Process
			PW string
		}{ws.Procs, ws.ProcsWhy})
		if prev, ok := e.lastProcs[ws.Dev]; ok && prev == string(b) {
			ws.Procs, ws.ProcsWhy, ws.Same = nil, "", true
			continue
		}
		e.lastProcs[ws.Dev] = string(b)
	}
	return &w
}

// historyPoints is how much history a client gets on attach: enough for
// the widest sparkline.
const historyPoints = 1200

// GPUSnapshot is the runner's GPU side for a client that attaches.
func GPUSnapshot(s *gpu.Sampler) *GPURound {
	inv := s.Inventory()
	w := GPURound{Inv: &inv, Hosts: s.Hosts(), Samples: encodeSamples(inv, s.Latest())}
	for _, d := range inv.Devices {
		pts := s.History(d.ID(), historyPoints)
		wp := make([]gpuPoint, len(pts))
		for i, p := range pts {
			wp[i] = gpuPoint(p)
		}
		w.Hist = append(w.Hist, wp)
	}
	return &w
}

// History is device i's recent points, oldest first (a snapshot's).
func (w *GPURound) History(i int) []gpu.Point {
	if w == nil || i >= len(w.Hist) {
		return nil
	}
	out := make([]gpu.Point, len(w.Hist[i]))
	for j, p := range w.Hist[i] {
		out[j] = gpu.Point(p)
	}
	return out
}

// DecodeSamples is the other way; inv is the inventory the round refers
// to, prev the last round decoded (for process lists that did not change).
func DecodeSamples(inv gpu.Inventory, ws []wireSample, prev []gpu.Sample) []gpu.Sample {
	out := make([]gpu.Sample, 0, len(ws))
	for _, w := range ws {
		if w.Dev < 0 || w.Dev >= len(inv.Devices) {
			continue
		}
		s := gpu.Sample{Time: time.UnixMilli(w.T), Device: inv.Devices[w.Dev], Lost: w.Lost, LostWhy: w.LostWhy, MIG: w.MIG,
			Throttle: w.Throttle, Procs: w.Procs, ProcsWhy: w.ProcsWhy}
		if w.Same {
			for _, p := range prev {
				if p.Device.ID() == s.Device.ID() {
					s.Procs, s.ProcsWhy = p.Procs, p.ProcsWhy
				}
			}
		}
		for j, m := range metrics(&s) {
			if j < len(w.V) && w.V[j].OK {
				*m = gpu.Metric{V: w.V[j].V, OK: true}
			} else {
				*m = gpu.Metric{Why: w.Why[strconv.Itoa(j)]}
			}
		}
		out = append(out, s)
	}
	return out
}
