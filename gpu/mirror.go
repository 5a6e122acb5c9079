package gpu

import (
	"sync"
	"time"
)

// Mirror is a Source that reads nothing itself: it repeats what another
// process's Sampler saw (the campaign's runner, through its socket), so a
// client's Sampler keeps a history and feeds a window exactly as a local
// one does. Set it, then call the client Sampler's Round.
type Mirror struct {
	mu      sync.Mutex
	inv     Inventory
	hosts   []HostState
	samples []Sample
}

// NewMirror starts with the runner's inventory.
func NewMirror(inv Inventory) *Mirror { return &Mirror{inv: inv} }

// Set is the runner's latest round.
func (m *Mirror) Set(inv Inventory, hosts []HostState, samples []Sample) {
	m.mu.Lock()
	m.inv, m.hosts, m.samples = inv, hosts, samples
	m.mu.Unlock()
}

// Inventory implements Source.
func (m *Mirror) Inventory() Inventory {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inv
}

// Hosts implements Hosts.
func (m *Mirror) Hosts() []HostState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hosts
}

// Sample implements Source: the runner's round as it was, its times kept.
func (m *Mirror) Sample(time.Time) []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.samples
}

// Close implements Source.
func (m *Mirror) Close() error { return nil }

// Seed puts points taken elsewhere (the runner's history) in front of a
// device's history, oldest first, as if this Sampler had taken them.
func (s *Sampler) Seed(d Device, pts []Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.slot[d.ID()]; known || len(pts) == 0 {
		return
	}
	if len(pts) > s.keep {
		pts = pts[len(pts)-s.keep:]
	}
	s.slot[d.ID()] = len(s.hist)
	h := make([]Point, len(pts), max(len(pts), min(s.keep, 1024)))
	copy(h, pts)
	s.hist = append(s.hist, h)
	s.head = append(s.head, 0)
	s.fine = append(s.fine, fineRing{})
}
