package daemon

// What the runner feeds from its events besides the results file: the
// sampler's idea of the campaign's processes, the scraped Slurm nodes,
// the demo's fake fleet; and the GPU sources opened.

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/slurm/words"
)

// feedSessions tells the sampler which sessions are the campaign's.
func feedSessions(s *gpu.Sampler, events <-chan runner.Event) {
	for e := range events {
		s.SetSessions(e.State.Sessions)
	}
}

// feedHolders tells the runner, every interval until done, which of this
// machine's GPUs the campaign's own processes hold (a leftover of a
// finished step makes the next phase wait and is stopped).
func feedHolders(s *gpu.Sampler, r *runner.Runner, every time.Duration, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var held []runner.Holder
		for _, sm := range s.Latest() {
			if sm.Device.Host != "" {
				continue
			}
			for _, p := range sm.Procs {
				if p.Phase != "" {
					held = append(held, runner.Holder{GPU: sm.Device.Index, PID: p.PID, Name: p.Name, Mem: p.MemUsed, Phase: p.Phase})
				}
			}
		}
		r.SetHolders(held)
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// followSlurmNodes keeps the scraped exporters (dcgm:slurm-nodes:PORT) on
// the nodes of the campaign's running Slurm jobs: as a job starts its
// nodes are added, as it ends they stop being scraped. Node lists are
// expanded as `scontrol show hostnames` does (words.Hostnames).
func followSlurmNodes(src gpu.Source, events <-chan runner.Event) {
	if !gpu.FollowsSlurm(src) {
		for range events {
		}
		return
	}
	last := "\x00"
	for e := range events {
		if e.State == nil {
			continue
		}
		var lists []string
		for _, p := range e.State.Phases {
			if j := p.Slurm; j != nil && j.Nodes != "" && (j.State == "RUNNING" || j.State == "SUSPENDED" || j.State == "COMPLETING") {
				lists = append(lists, j.Nodes)
			}
		}
		key := strings.Join(lists, " ")
		if key == last {
			continue
		}
		var nodes []string
		for _, l := range lists {
			nodes = append(nodes, words.Hostnames(l)...)
		}
		last = key
		gpu.FollowNodes(src, nodes)
	}
}

// feedFake drives the fake fleet from what the campaign does, so the
// demo's gauges move with it.
func feedFake(f *gpu.Fake, n int, events <-chan runner.Event, plan *campaign.Plan) {
	for e := range events {
		a := gpu.Activity{Devices: map[int]gpu.Load{}}
		for _, p := range e.State.Phases {
			ph := plan.Phase(p.ID)
			gpus := ph.GPUs
			if gpus == nil {
				gpus = make([]int, n)
				for i := range gpus {
					gpus[i] = i
				}
			}
			var pids []int
			if p.Status == runner.Running || p.Status == runner.Ready {
				if pg := p.Steps[p.Current].PGID; pg > 0 {
					pids = []int{pg}
				}
			}
			for _, g := range gpus {
				l, ok := a.Devices[g]
				if !ok {
					l.Loading = -1
				}
				switch {
				case ph.Service != nil && p.Status == runner.Running:
					l.Loading = max(0, p.Steps[0].Progress)
				case ph.Service != nil && p.Status == runner.Ready:
					l.ServiceUp = true
				case p.Status == runner.Running && ph.Service == nil:
					// A client of a service loads the service's GPUs.
					l.Busy = true
				default:
					continue
				}
				l.PIDs = append(l.PIDs, pids...)
				a.Devices[g] = l
			}
		}
		f.SetActivity(a)
	}
}

// OpenGPU parses sources in the campaign's grammar (none named: auto)
// and opens them as one fleet (see gpu.Open).
func OpenGPU(raws []string, interval time.Duration) (gpu.Source, bool, string, error) {
	srcs, err := campaign.ParseGPUSources(raws)
	if err != nil {
		return nil, false, "", fmt.Errorf("--gpu: %v", err)
	}
	return openSources(srcs, interval)
}

// openSources opens parsed sources (a campaign's gpus.sources).
func openSources(srcs []campaign.GPUSource, interval time.Duration) (gpu.Source, bool, string, error) {
	specs := make([]gpu.Spec, len(srcs))
	for i, s := range srcs {
		specs[i] = gpu.Spec{Kind: s.Kind, N: s.N, Model: s.Model, URLs: s.URLs}
	}
	return gpu.Open(specs, interval)
}

// ApproveList checks --approve's phase ids like needs: an unknown one is
// bad input, with the nearest id, never a gate that waits forever.
func ApproveList(plan *campaign.Plan, flag string) ([]string, error) {
	if strings.TrimSpace(flag) == "" {
		return nil, nil
	}
	var ids []string
	for _, id := range strings.Split(flag, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if id == "all" {
			ids = append(ids, id)
			continue
		}
		names := plan.Named(id) // a phase run per service point: each copy
		if names == nil {
			return nil, plan.CheckPhaseID(id)
		}
		ids = append(ids, names...)
	}
	return ids, nil
}
