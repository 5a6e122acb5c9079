package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/greenlight-run/greenlight/runner/link"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/gpu"
)

// cmdGPUs prints what the GPU source reads now: a quick check of the
// telemetry greenlight will show, and what scripts/nvml-vs-smi compares
// with nvidia-smi.
func cmdGPUs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var src link.GPUFlag
	fs.Var(&src, "gpu", "auto, nvml, fake:N[:MODEL], none or dcgm:URL[,URL...]; repeat to combine")
	asJSON := fs.Bool("json", false, "one JSON object per device and round")
	rounds := fs.Int("samples", 1, "rounds to take")
	every := fs.Duration("interval", time.Second, "time between rounds")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s, _, note, err := daemon.OpenGPU(src, *every)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight gpus: %v\n", err)
		return 2
	}
	defer s.Close()
	enc := json.NewEncoder(stdout)
	for r := 0; r < *rounds; r++ {
		if r > 0 {
			time.Sleep(*every)
		}
		samples := s.Sample(time.Now())
		inv := s.Inventory() // remote hosts list their GPUs once they answer
		var hosts []gpu.HostState
		if h, ok := s.(gpu.Hosts); ok {
			hosts = h.Hosts()
		}
		for _, h := range hosts {
			if !h.Up {
				fmt.Fprintf(stderr, "greenlight gpus: %s (%s): %s\n", h.Name, h.URL, h.Err)
			}
		}
		if r == 0 && (note != "" || len(inv.Devices) == 0) {
			fmt.Fprintf(stderr, "greenlight gpus: no GPU: %s\n", firstNonEmpty(inv.Why, note))
			return 1
		}
		if *asJSON {
			for _, sm := range samples {
				enc.Encode(jsonSample(sm, inv))
			}
			continue
		}
		fmt.Fprintf(stdout, "%s · %s · driver %s · CUDA %s\n", time.Now().Format("15:04:05"), inv.Source, firstNonEmpty(inv.Driver, "n/a"), firstNonEmpty(inv.CUDA, "n/a"))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "host\tGPU\tname\tutil\tmem used\tmem total\ttemp\tpower\tlimit\tSM clock\tthrottle\tprocs\t")
		for _, sm := range samples {
			if sm.Lost {
				fmt.Fprintf(tw, "%s\t%d\t%s\tlost: %s\t\t\t\t\t\t\t\t\t\n", hostName(sm.Device), sm.Device.Index, sm.Device.Name, sm.LostWhy)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.0f MiB\t%s\t%s\t%s\t%s\t%s\t%d\t\n", hostName(sm.Device), sm.Device.Index, sm.Device.Name,
				sm.Util.Format("%.0f %%"), scale(sm.MemUsed, 1.0/(1<<20)).Format("%.0f MiB"), float64(sm.Device.MemTotal)/(1<<20),
				sm.Temp.Format("%.0f °C"), sm.Power.Format("%.1f W"), sm.PowerLimit.Format("%.0f W"), sm.SMClock.Format("%.0f MHz"),
				orDash(strings.Join(sm.Throttle, ",")), len(sm.Procs))
		}
		tw.Flush()
	}
	return 0
}

func jsonSample(s gpu.Sample, inv gpu.Inventory) map[string]any {
	v := func(x gpu.Metric) any {
		switch {
		case !x.OK && x.Why == "":
			return "n/a: not read by this source"
		case !x.OK:
			return "n/a: " + x.Why
		}
		return x.V
	}
	return map[string]any{
		"time": s.Time.Format(time.RFC3339Nano), "host": hostName(s.Device), "index": s.Device.Index, "name": s.Device.Name, "uuid": s.Device.UUID,
		"lost": s.Lost, "memory_total_mib": float64(s.Device.MemTotal) / (1 << 20), "memory_used_mib": v(scale(s.MemUsed, 1.0/(1<<20))),
		"utilization_gpu": v(s.Util), "utilization_memory": v(s.MemUtil), "temperature_c": v(s.Temp),
		"power_w": v(s.Power), "power_limit_w": v(s.PowerLimit), "sm_clock_mhz": v(s.SMClock), "mem_clock_mhz": v(s.MemClock),
		"pcie_rx_bps": v(s.PCIeRx), "pcie_tx_bps": v(s.PCIeTx), "ecc_uncorrected": v(s.ECCErrors), "xid": v(s.XID), "mig": s.MIG,
		"throttle": s.Throttle, "processes": s.Procs, "driver": inv.Driver, "cuda": inv.CUDA,
	}
}

func scale(x gpu.Metric, f float64) gpu.Metric {
	x.V *= f
	return x
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// hostName is the device's node, "local" for this machine.
func hostName(d gpu.Device) string {
	if d.Host == "" {
		return "local"
	}
	return d.Host
}
