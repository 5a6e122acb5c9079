package gpu

import (
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Spec is a source to open, as the campaign's grammar parsed it
// (runner/campaign.GPUSource): Kind auto, nvml, fake (N devices of
// Model, FakeModels' key), none, or dcgm (URLs, complete).
type Spec struct {
	Kind  string
	N     int
	Model string
	URLs  []string
}

// Open opens the sources as one fleet; the first is this machine's (the
// grammar puts it first). local says whether this machine's GPUs are
// read; note says once why not, when auto found none.
func Open(specs []Spec, interval time.Duration) (src Source, local bool, note string, err error) {
	var parts Multi
	var remote []string
	localKind := ""
	defer func() {
		if err != nil {
			parts.Close()
		}
	}()
	for _, s := range specs {
		if s.Kind == "dcgm" {
			remote = append(remote, s.URLs...)
			continue
		}
		localKind = s.Kind
		l, isLocal, n, err := openLocal(s)
		if err != nil {
			return nil, false, "", err
		}
		parts, local, note = append(parts, l), isLocal, n
	}
	if len(remote) > 0 {
		d, err := OpenDCGM(remote, DCGMOptions{Wait: min(300*time.Millisecond, interval*3/10)})
		if err != nil {
			return nil, false, "", fmt.Errorf("--gpu dcgm: %v", err)
		}
		if localKind == "auto" && !local {
			parts, note = nil, "" // auto found no GPU here: the remote ones are the fleet
		}
		parts = append(parts, d)
	}
	if len(parts) == 1 {
		return parts[0], local, note, nil
	}
	return parts, local, note, nil
}

func openLocal(s Spec) (src Source, local bool, note string, err error) {
	switch s.Kind {
	case "none":
		return None{Why: "--gpu none"}, false, "", nil
	case "nvml", "auto":
		n, err := OpenNVML(nvml.New())
		if err == nil {
			return n, true, "", nil
		}
		if s.Kind == "nvml" {
			return nil, false, "", fmt.Errorf("--gpu nvml: %v", err)
		}
		return None{Why: err.Error()}, false, "no GPU telemetry: " + err.Error(), nil
	case "fake":
		m, ok := FakeModelOf(s.Model)
		if !ok {
			return nil, false, "", fmt.Errorf("--gpu fake:%d:%s: no such board (%s)", s.N, s.Model, strings.Join(FakeModelKeys(), ", "))
		}
		return NewFakeOf(m, s.N, 1), true, "", nil
	}
	return nil, false, "", fmt.Errorf("unknown GPU source %q", s.Kind)
}
