package daemon

// The monitor's witness of each step: as a run ends, what its GPUs drew
// and the clock they ran at, and why its rows are doubtful (a GPU
// throttled, a process not of the campaign, an XID or ECC error, a GPU
// lost, the client the bottleneck, a profiler capturing). The runner
// journals what it says with the run (runner.StepFacts); the record, the
// model and a search read it there, and nothing judges the run again.

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/measure"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/trace"
)

type witness struct {
	plan *campaign.Plan
	gpus measure.GPUHistory // nil: no GPU readings (the stamp has the client and the profiler only)

	mu      sync.Mutex
	conds   *conditions.Book              // the GPUs' setup, as last gathered; nil until then
	servers map[string]measure.ServerView // scraped services, by phase id
}

// setConditions takes what the campaign runs under, as gathered.
func (w *witness) setConditions(b conditions.Book) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conds = &b
}

// setServers takes the services' scrapes.
func (w *witness) setServers(s map[string]measure.ServerView) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.servers = s
}

// facts are what the monitor saw of the run s (runner.Witness).
func (w *witness) facts(s runner.StepSeen) *runner.StepFacts {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := &runner.StepFacts{}
	if w.gpus != nil {
		var clock float64
		var first time.Time
		clocks, clockSamples := 0, 0
		end := w.meter()
		energy := energyTally{}
		for _, g := range measure.PhaseGPUsOver(w.gpus, s.Phase, s.State, s.Step.Started, s.Step.Ended) {
			energy.add(g, s.Step.Counters, end)
			f.Readings += g.Samples
			if g.Samples == 0 {
				continue
			}
			if first.IsZero() || g.First.Before(first) {
				first = g.First
			}
			if g.MeanPower >= 0 {
				f.PowerW += g.MeanPower
				f.PowerGPUs++
			}
			if g.MeanSMMHz > 0 {
				clock += g.MeanSMMHz
				clocks++
				clockSamples += g.ClockSamples
			}
			f.Stamp = append(f.Stamp, g.Doubts(w.condition(g.Device))...)
		}
		if clocks > 0 {
			f.SMClockMHz = clock / float64(clocks)
			f.SMClockSamples = clockSamples
		}
		f.EnergyWh, f.EnergyFrom = energy.total()
		if !first.IsZero() && first.Sub(s.Step.Started) > w.late() {
			// Seen from part-way (a runner started again while it ran, an
			// exporter answered late): its energy would be a part's, said
			// as the whole's, unless its counters were read at its start.
			f.ReadFrom = first
			if f.EnergyFrom != runner.EnergyCounter {
				f.EnergyWh, f.EnergyFrom = 0, ""
			}
		}
	}
	if why := w.clientBound(s); why != "" {
		f.Stamp = append(f.Stamp, why)
	}
	for _, row := range s.Step.Results {
		f.Stamp = append(f.Stamp, runner.LoadStamps(row)...)
	}
	f.Server = w.serverFacts(s)
	for _, sf := range f.Server {
		f.Stamp = append(f.Stamp, sf.LoadVerdicts(state.Requested(s.Step.Results))...)
	}
	for _, c := range s.Claimed {
		if trace.IsTrace(c) {
			f.Stamp = append(f.Stamp, "a profiler capture ran (trace files written during the step)")
			break
		}
	}
	if f.Readings == 0 && len(f.Stamp) == 0 && len(f.Server) == 0 {
		return nil
	}
	return f
}

// meter reads the GPUs' energy counters now, where the source can
// (runner.Meter); nil where it cannot.
func (w *witness) meter() *runner.Counters {
	m, ok := w.gpus.(interface {
		EnergyNow() (map[gpu.DeviceID]float64, bool)
		Inventory() gpu.Inventory
	})
	if !ok {
		return nil
	}
	now := time.Now()
	e, ok := m.EnergyNow()
	if !ok {
		return nil
	}
	c := &runner.Counters{At: now, MJ: map[string]float64{}}
	for _, d := range m.Inventory().Devices {
		if v, ok := e[d.ID()]; ok {
			c.MJ[d.Label()] = v
		}
	}
	return c
}

// energyTally sums a run's energy over its GPUs, each by the best it
// has: its counter read at the run's start and end, else its counter as
// sampled, interpolated at the edges, else its power integrated. The
// total says the weakest basis any GPU needed; a GPU with none leaves it
// unknown.
type energyTally struct {
	wh      float64
	from    string
	unknown bool
}

var energyRank = map[string]int{runner.EnergyCounter: 0, runner.EnergyInterpolated: 1, runner.EnergyPower: 2}

func (t *energyTally) add(g gpu.Summary, start, end *runner.Counters) {
	if g.Samples == 0 && start == nil {
		return
	}
	from, wh := "", 0.0
	if start != nil && end != nil {
		a, ok1 := start.MJ[g.Device.Label()]
		b, ok2 := end.MJ[g.Device.Label()]
		if ok1 && ok2 && b >= a { // a counter that went back: the driver reloaded
			from, wh = runner.EnergyCounter, (b-a)/3.6e6
		}
	}
	if from == "" && g.EnergyWh >= 0 {
		switch g.EnergyFrom {
		case "counter":
			from, wh = runner.EnergyInterpolated, g.EnergyWh
		case "power":
			from, wh = runner.EnergyPower, g.EnergyWh
		}
	}
	if from == "" {
		t.unknown = true
		return
	}
	t.wh += wh
	if t.from == "" || energyRank[from] > energyRank[t.from] {
		t.from = from
	}
}

func (t energyTally) total() (float64, string) {
	if t.unknown || t.from == "" || t.wh <= 0 {
		return 0, ""
	}
	return t.wh, t.from
}

// late is how long after a run's start its first reading may come and
// the readings still cover the run: two of the sampler's intervals (1 s
// where it has none to say).
func (w *witness) late() time.Duration {
	if iv, ok := w.gpus.(interface{ Interval() time.Duration }); ok && iv.Interval() > 0 {
		return 2 * iv.Interval()
	}
	return 2 * time.Second
}

// condition is a device's setup as last read (at the start of the
// step's phase, or since).
func (w *witness) condition(d gpu.Device) (gpu.Conditions, bool) { return w.conds.GPU(d) }

// serverFacts are each service the run used, as its /metrics saw the
// run's window; the server's verdicts on the row's load (capped by the
// server, admission-limited: state.ServerFacts.LoadVerdicts) are stamped
// from them.
func (w *witness) serverFacts(s runner.StepSeen) []runner.ServerFacts {
	var out []runner.ServerFacts
	for _, svc := range measure.ServersOf(w.plan, w.servers, s.Phase.ID) {
		if f, ok := measure.ServerFacts(svc, w.servers[svc], s.Step.Started, s.Step.Ended); ok {
			out = append(out, f)
		}
	}
	return out
}

// clientBound says, for a run whose last row is an output token
// throughput, whether a service it used generated more than the client
// says it received (beyond 5%): the client, not the server, set the
// pace. "" otherwise.
func (w *witness) clientBound(s runner.StepSeen) string {
	if len(s.Step.Results) == 0 {
		return ""
	}
	row := s.Step.Results[len(s.Step.Results)-1]
	for i, c := range row.Cols {
		client, ok := row.Values[i].(float64)
		if !ok || client <= 0 || !campaign.TokenRateByName(c) || !strings.Contains(strings.ToLower(c), "output") && !strings.EqualFold(c, "tok_s") {
			continue
		}
		for _, svc := range measure.ServersOf(w.plan, w.servers, s.Phase.ID) {
			server, ok := w.servers[svc].Window(s.Step.Started, s.Step.Ended).GenRate()
			if ok && client < 0.95*server {
				return fmt.Sprintf("the client was the bottleneck (client-bound?): it reported %s tok/s, the server %s generated %s tok/s", format.Number(client), svc, format.Number(server))
			}
		}
	}
	return ""
}
