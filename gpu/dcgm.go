package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DCGM reads the GPUs of other nodes from NVIDIA's dcgm-exporter, the
// Prometheus endpoint clusters already run on every GPU node
// (http://NODE:9400/metrics).
//
// Each host is scraped on its own goroutine, at most one request in flight
// per host. Sample waits for the round's scrapes only until a deadline and
// otherwise reports what each host last said, so a slow or dead host never
// holds up the sampler, the local GPUs or the screen. A host that stops
// answering keeps its GPUs on screen as lost, with the error and when it
// was last seen.
type DCGM struct {
	listMu sync.Mutex
	hosts  []*dcgmHost
	// templates are exporter URLs on the host SlurmNodes: one host is
	// scraped for each node a campaign's Slurm jobs run on (FollowNodes).
	templates []string
	client    *http.Client
	wait      time.Duration // how long Sample waits for this round's scrapes
	ctx       context.Context
	cancel    context.CancelFunc
	running   sync.WaitGroup
}

// HostState is what greenlight knows of one remote host.
type HostState struct {
	URL      string
	Name     string // Hostname label, else the URL's host
	Driver   string
	GPUs     int
	Up       bool          // the last scrape succeeded
	LastSeen time.Time     // last successful scrape; zero if never
	Err      string        // why the last scrape failed
	Scraping time.Duration // > 0: a request has been open this long
}

// Hosts reports each host's state; a Source with remote hosts implements it.
type Hosts interface {
	Hosts() []HostState
}

type dcgmHost struct {
	url  string
	host string // from the URL, until the exporter names itself

	mu       sync.Mutex
	state    HostState
	devices  []Device // as last seen, in gpu order; kept when the host goes away
	samples  []Sample
	inflight time.Time // when the open request started; zero if none
	done     chan struct{}
	retired  bool // a Slurm node whose job ended: kept, not scraped
	slurm    bool // added by FollowNodes
}

// SlurmNodes, as an exporter's host (dcgm:slurm-nodes:9400), stands for
// the nodes of the campaign's running Slurm jobs.
const SlurmNodes = "slurm-nodes"

// DCGMOptions tunes the scraper; zero values take the defaults.
type DCGMOptions struct {
	// Wait is how long Sample waits for a round's answers (default 300 ms).
	Wait time.Duration
	// Timeout ends a request that has not answered (default 10 s).
	Timeout time.Duration
}

// OpenDCGM prepares to scrape each exporter URL. A URL may be given as
// NODE or NODE:PORT; the scheme defaults to http, the port to 9400 and the
// path to /metrics. Nothing is fetched until the first Sample.
func OpenDCGM(urls []string, o DCGMOptions) (*DCGM, error) {
	if len(urls) == 0 {
		return nil, errors.New("dcgm: give at least one exporter URL, e.g. dcgm:http://node2:9400/metrics")
	}
	o.Wait = orDefault(o.Wait, 300*time.Millisecond)
	o.Timeout = orDefault(o.Timeout, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	d := &DCGM{wait: o.Wait, ctx: ctx, cancel: cancel, client: &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     90 * time.Second,
		},
	}}
	seen := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw) // completed by the caller (campaign.ExporterURL)
		if err != nil || u.Hostname() == "" {
			cancel()
			return nil, fmt.Errorf("dcgm: %q is not an exporter URL", raw)
		}
		if seen[u.String()] {
			continue
		}
		seen[u.String()] = true
		if u.Hostname() == SlurmNodes {
			d.templates = append(d.templates, u.String())
			continue
		}
		h := &dcgmHost{url: u.String(), host: u.Hostname()}
		h.state = HostState{URL: h.url, Name: h.host, Err: "not scraped yet"}
		d.hosts = append(d.hosts, h)
	}
	return d, nil
}

func orDefault(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}

// Inventory lists the devices of every host seen so far, host by host in
// the order the URLs were given.
func (d *DCGM) Inventory() Inventory {
	inv := Inventory{Source: "dcgm"}
	drivers := map[string]bool{}
	for _, h := range d.list() {
		h.mu.Lock()
		inv.Devices = append(inv.Devices, h.devices...)
		if h.state.Driver != "" && !drivers[h.state.Driver] {
			drivers[h.state.Driver] = true
			inv.Driver = strings.TrimPrefix(inv.Driver+", "+h.state.Driver, ", ")
		}
		h.mu.Unlock()
	}
	if n := len(d.list()); len(inv.Devices) == 0 && n == 0 && len(d.templates) > 0 {
		inv.Why = "no Slurm job runs yet: its nodes' exporters are scraped while it runs"
	} else if len(inv.Devices) == 0 {
		inv.Why = fmt.Sprintf("no exporter has answered yet (%d host(s))", n)
	}
	return inv
}

// Hosts reports every host, in the order given.
func (d *DCGM) Hosts() []HostState {
	hosts := d.list()
	out := make([]HostState, 0, len(hosts))
	now := time.Now()
	for _, h := range hosts {
		h.mu.Lock()
		st := h.state
		if !h.inflight.IsZero() {
			st.Scraping = now.Sub(h.inflight)
		}
		h.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Sample starts a scrape of every host with none open, waits for them
// until the deadline, and returns each host's latest devices.
func (d *DCGM) Sample(now time.Time) []Sample {
	var started []chan struct{}
	hosts := d.list()
	for _, h := range hosts {
		h.mu.Lock()
		if h.inflight.IsZero() && d.ctx.Err() == nil && !h.retired {
			h.inflight = time.Now()
			h.done = make(chan struct{})
			started = append(started, h.done)
			d.running.Add(1)
			go d.scrape(h, h.done)
		}
		h.mu.Unlock()
	}
	deadline := time.NewTimer(d.wait)
	defer deadline.Stop()
wait:
	for _, ch := range started {
		select {
		case <-ch:
		case <-deadline.C:
			break wait
		}
	}
	var out []Sample
	for _, h := range hosts {
		h.mu.Lock()
		for _, s := range h.samples {
			if !h.state.Up {
				// Old readings are not shown as current ones.
				why := fmt.Sprintf("%s: %s", h.state.Name, h.state.Err)
				if !h.state.LastSeen.IsZero() {
					why += ", last seen " + now.Sub(h.state.LastSeen).Round(time.Second).String() + " ago"
				}
				s = Sample{Device: s.Device, Lost: true, LostWhy: why}
			}
			s.Time = now
			out = append(out, s)
		}
		h.mu.Unlock()
	}
	return out
}

func (d *DCGM) list() []*dcgmHost {
	d.listMu.Lock()
	defer d.listMu.Unlock()
	return slices.Clone(d.hosts)
}

// FollowNodes scrapes, for each exporter given on the host SlurmNodes,
// the same exporter on each of these nodes (those of the campaign's
// running Slurm jobs), and stops scraping nodes no longer listed: their
// GPUs stay in the fleet (a phase's summary covers them) but read as
// "not scraped: its Slurm job ended" rather than as current.
func (d *DCGM) FollowNodes(nodes []string) {
	if len(d.templates) == 0 {
		return
	}
	want := map[string]bool{}
	for _, t := range d.templates {
		for _, n := range nodes {
			u, err := url.Parse(t) // a copy for each node
			if err != nil || n == "" {
				continue
			}
			if p := u.Port(); p != "" {
				u.Host = net.JoinHostPort(n, p)
			} else {
				u.Host = n
			}
			want[u.String()] = true
		}
	}
	d.listMu.Lock()
	defer d.listMu.Unlock()
	have := map[string]bool{}
	for _, h := range d.hosts {
		have[h.url] = true
		if !h.slurm {
			continue
		}
		h.mu.Lock()
		h.retired = !want[h.url]
		if h.retired {
			h.state.Up, h.state.Err = false, jobEnded
		}
		h.mu.Unlock()
	}
	for _, u := range slices.Sorted(maps.Keys(want)) {
		if have[u] {
			continue
		}
		pu, _ := url.Parse(u)
		h := &dcgmHost{url: u, host: pu.Hostname(), slurm: true}
		h.state = HostState{URL: u, Name: h.host, Err: "not scraped yet"}
		d.hosts = append(d.hosts, h)
	}
}

// jobEnded is why a retired Slurm node's GPUs are not current.
const jobEnded = "not scraped: its Slurm job ended"

// FollowNodes hands the nodes to every DCGM source within src.
func FollowNodes(src Source, nodes []string) {
	switch s := src.(type) {
	case *DCGM:
		s.FollowNodes(nodes)
	case Multi:
		for _, p := range s {
			FollowNodes(p, nodes)
		}
	}
}

// FollowsSlurm says whether src scrapes the nodes of Slurm jobs.
func FollowsSlurm(src Source) bool {
	switch s := src.(type) {
	case *DCGM:
		return len(s.templates) > 0
	case Multi:
		for _, p := range s {
			if FollowsSlurm(p) {
				return true
			}
		}
	}
	return false
}

// Close ends open requests and waits for their goroutines.
func (d *DCGM) Close() error {
	d.cancel()
	d.running.Wait()
	d.client.CloseIdleConnections()
	return nil
}

// maxBody bounds what one exporter may send: 8 GPUs with every field is
// under 200 KB.
const maxBody = 16 << 20

func (d *DCGM) scrape(h *dcgmHost, done chan struct{}) {
	defer d.running.Done()
	defer close(done)
	samples, err := d.fetch(h.url)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inflight = time.Time{}
	if err != nil {
		h.state.Up, h.state.Err = false, err.Error()
		return
	}
	if len(samples) == 0 {
		h.state.Up, h.state.Err = false, "the exporter lists no GPU (is it dcgm-exporter?)"
		return
	}
	h.state.Up, h.state.Err, h.state.LastSeen = true, "", time.Now()
	if h.retired {
		h.state.Up, h.state.Err = false, jobEnded
	}
	if name := samples[0].Device.Host; name != "" {
		h.state.Name = name
	}
	h.state.Driver = samples[0].driver
	h.state.GPUs = len(samples)
	h.samples = h.samples[:0]
	// Devices are only added, never reordered, so history stays with them.
	for _, s := range samples {
		if !slices.ContainsFunc(h.devices, func(d Device) bool { return d.ID() == s.Device.ID() }) {
			h.devices = append(h.devices, s.Device)
		}
	}
	for _, dev := range h.devices {
		i := slices.IndexFunc(samples, func(s dcgmSample) bool { return s.Device.ID() == dev.ID() })
		if i < 0 {
			h.samples = append(h.samples, Sample{Device: dev, Lost: true, LostWhy: "no longer listed by its exporter"})
			continue
		}
		h.samples = append(h.samples, samples[i].Sample)
	}
}

func (d *DCGM) fetch(u string) ([]dcgmSample, error) {
	req, err := http.NewRequestWithContext(d.ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, shortNetError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, shortNetError(err)
	}
	return ParseDCGM(bytes.NewReader(onlyWanted(body)), urlHost(u))
}

// onlyWanted blanks the lines of series greenlight does not read, keeping
// the line count so a parse error names the exporter's own line. An
// exporter with profiling fields serves three times what is read; parsing
// it all was two thirds of a round's CPU.
func onlyWanted(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for line := range bytes.Lines(body) {
		name := line
		if bytes.HasPrefix(line, []byte("#")) {
			f := bytes.Fields(line)
			if len(f) < 3 {
				out = append(out, '\n')
				continue
			}
			name = f[2]
		} else if i := bytes.IndexAny(line, "{ \t\n"); i >= 0 {
			name = line[:i]
		}
		if _, ok := dcgmFields[string(name)]; ok {
			out = append(out, line...)
		} else {
			out = append(out, '\n')
		}
	}
	return out
}

func urlHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Hostname()
}

// shortNetError drops the method and URL Go puts before a request's error:
// the screen names the host already.
func shortNetError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return errors.New("stopped")
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "Client.Timeout"):
		return errors.New("no answer (timed out)")
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("%s: %v", oe.Op, oe.Err)
	}
	return err
}

type dcgmSample struct {
	Sample
	driver                      string
	fbFree, fbReserved, fbTotal Metric // bytes; for the memory total
}

// DCGM's "no value" sentinels. Exporters before 3.x print them as numbers;
// newer ones leave the series out. Both are n/a here.
const (
	dcgmInt32Blank = 0x7ffffff0         // + 1 not found, 2 not supported, 3 no permission
	dcgmInt64Blank = 0x7ffffffffffffff0 // as a float64 it rounds to 2^63
	dcgmFP64Blank  = 1 << 47            // 140737488355328, + the same offsets
)

var sentinelWhy = [...]string{"blank", "not found", "not supported", "not permitted"}
