package campaign

// The GPU-source grammar, in one place: `gpus.sources` in a campaign file
// and --gpu on the command line both say where GPU readings come from as
// auto, nvml, fake:N[:MODEL], none, or dcgm:URL[,URL...] for other
// nodes' dcgm-exporters. It is parsed here, once, into GPUSource values that
// main hands to package gpu.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// boardName is a fake board's name: rtx-pro-6000.
var boardName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// GPUSource is one entry of the grammar, parsed.
type GPUSource struct {
	Kind  string   // "auto", "nvml", "fake", "none" or "dcgm"
	N     int      // fake: the fleet's size
	Model string   // fake: the board it stands in for (gpu.FakeModels; "" the H200)
	URLs  []string // dcgm: the exporters' URLs, completed (http://NODE:9400/metrics)
}

// Local says whether the source reads this machine's GPUs.
func (s GPUSource) Local() bool { return s.Kind != "dcgm" }

func (s GPUSource) String() string {
	switch s.Kind {
	case "fake":
		if s.Model != "" {
			return "fake:" + strconv.Itoa(s.N) + ":" + s.Model
		}
		return "fake:" + strconv.Itoa(s.N)
	case "dcgm":
		return "dcgm:" + strings.Join(s.URLs, ",")
	}
	return s.Kind
}

// GPUSourceError is a source that does not parse, with how to write it.
type GPUSourceError struct {
	What, Hint string
}

func (e *GPUSourceError) Error() string { return e.What + " (" + e.Hint + ")" }

// ParseGPUSource parses one source.
func ParseGPUSource(raw string) (GPUSource, error) {
	src := strings.TrimSpace(raw)
	kind, rest, hasRest := strings.Cut(src, ":")
	switch {
	case kind == "dcgm":
		if strings.TrimSpace(rest) == "" {
			return GPUSource{}, &GPUSourceError{"dcgm: names no exporter", "write dcgm:http://NODE:9400/metrics, several separated by commas"}
		}
		s := GPUSource{Kind: "dcgm"}
		seen := map[string]bool{}
		for _, u := range strings.Split(rest, ",") {
			full, err := ExporterURL(u)
			if err != nil {
				return GPUSource{}, &GPUSourceError{err.Error(), "write dcgm:http://NODE:9400/metrics, or dcgm:NODE for the default port and path"}
			}
			if !seen[full] {
				seen[full] = true
				s.URLs = append(s.URLs, full)
			}
		}
		return s, nil
	case src == "auto" || src == "nvml" || src == "none":
		return GPUSource{Kind: src}, nil
	case kind == "fake":
		n := 8
		count, model, hasModel := strings.Cut(rest, ":")
		if hasRest {
			v, err := strconv.Atoi(count)
			if err != nil || v < 0 || v > 64 {
				return GPUSource{}, &GPUSourceError{fmt.Sprintf("%q: the fake fleet's size must be 0 to 64", src), "write fake:8, or fake:8:MODEL"}
			}
			n = v
		}
		model = strings.ToLower(model)
		if hasModel && !boardName.MatchString(model) {
			// Which boards there are is package gpu's to say (Open refuses
			// one it does not know, naming those it does).
			return GPUSource{}, &GPUSourceError{fmt.Sprintf("%q: a fake board's name is a word of letters, digits and dashes", src), "write fake:8:rtx-pro-6000, or fake:8 for H200s"}
		}
		return GPUSource{Kind: "fake", N: n, Model: model}, nil
	}
	return GPUSource{}, &GPUSourceError{fmt.Sprintf("unknown GPU source %q", src), "use auto, nvml, fake:N (fake:N:MODEL), none, or dcgm:http://NODE:9400/metrics"}
}

// ParseGPUSources parses a list: at most one source reads this machine's
// GPUs (auto when none is named), any number of dcgm lists; the local one
// comes first.
func ParseGPUSources(raws []string) ([]GPUSource, error) {
	var local *GPUSource
	var remote []GPUSource
	for _, raw := range raws {
		s, err := ParseGPUSource(raw)
		if err != nil {
			return nil, err
		}
		if !s.Local() {
			remote = append(remote, s)
			continue
		}
		if local != nil {
			return nil, &GPUSourceError{fmt.Sprintf("two sources for this machine's GPUs (%s and %s)", local, s), "keep one of auto, nvml, fake:N or none; add other nodes as dcgm:URL"}
		}
		local = &s
	}
	if local == nil {
		local = &GPUSource{Kind: "auto"}
	}
	return append([]GPUSource{*local}, remote...), nil
}

// ExporterURL completes NODE, NODE:PORT or a URL into a dcgm-exporter
// metrics URL: http, port 9400, path /metrics unless given.
func ExporterURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("an empty exporter address in the dcgm: list")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" || u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("exporter %q is not an http(s) URL", strings.TrimSpace(raw))
	}
	if u.Port() == "" && !strings.Contains(raw, "://") {
		u.Host = net.JoinHostPort(u.Hostname(), "9400")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	return u.String(), nil
}

// gpuSources checks `gpus.sources`, each entry where it is written.
func (l *loader) gpuSources(spec *CampaignSpec, plan *Plan) {
	local := ""
	for i, raw := range spec.GPUs.Sources {
		at := fmt.Sprintf("$.gpus.sources[%d]", i)
		s, err := ParseGPUSource(l.expand(at, raw, plan.Env))
		var ge *GPUSourceError
		if errors.As(err, &ge) {
			l.add(at, ge.What, ge.Hint)
			continue
		}
		if s.Local() {
			if local != "" {
				l.add(at, fmt.Sprintf("two sources for this machine's GPUs (%s and %s)", local, s), "keep one of auto, nvml, fake:N or none; add remote nodes as dcgm:URL")
			}
			local = s.String()
		}
		plan.GPUSources = append(plan.GPUSources, s)
	}
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}
