package campaign

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var portFlag = regexp.MustCompile(`--port[ =]"?([$]?[{]?\w+[}]?)"?`)

// Hints are what validate proposes beyond what the file must have: a
// vllm serve service without metrics: gets the URL of its own view.
func (p *Plan) Hints() []string {
	var out []string
	for _, ph := range p.Phases {
		sv := ph.Service
		if sv == nil || sv.MetricsURL != "" || !strings.Contains(sv.Run, "vllm serve") {
			continue
		}
		port := "8000"
		if m := portFlag.FindStringSubmatch(sv.Run); m != nil {
			port = m[1]
			if strings.HasPrefix(port, "$") && !strings.HasPrefix(port, "${") {
				port = "${" + port[1:] + "}"
			}
		}
		out = append(out, fmt.Sprintf("%s runs vllm serve: add `metrics: {url: http://localhost:%s/metrics}` under its service: to see, beside each phase that uses it, what the server saw (requests running and waiting, KV cache, preemptions, tokens/s).", ph.ID, port))
	}
	return append(out, p.sharedArtifactHints()...)
}

// sharedArtifactHints warn of a phase copied under a swept service whose
// artifacts: name no axis: every copy matches the others' files, and only
// the ownership rule keeps them apart.
func (p *Plan) sharedArtifactHints() []string {
	var out []string
	said := map[string]bool{}
	for _, ph := range p.Phases {
		pt := ph.Point
		if pt == nil || pt.Phase == pt.Service || said[pt.Phase] {
			continue
		}
		var shared []string
		for _, o := range p.Phases {
			if o == ph || o.Point == nil || o.Point.Phase != pt.Phase {
				continue
			}
			for _, g := range ph.Artifacts {
				if slices.Contains(o.Artifacts, g) && !slices.Contains(shared, g) {
					shared = append(shared, g)
				}
			}
		}
		if len(shared) == 0 {
			continue
		}
		said[pt.Phase] = true
		var axes []string
		for _, v := range pt.Values {
			axes = append(axes, "${"+v.Axis+"}")
		}
		out = append(out, fmt.Sprintf("warning: the copies of %s under each setting of %s share artifacts: %s (no axis in it): a file there is the one copy's during whose step it was written, and a copy's step must not run while another's writes; put %s in the folder (and in the path the server or the step writes to) to keep each setting's files apart.",
			pt.Phase, pt.Service, strings.Join(p.RelAll(shared), ", "), strings.Join(axes, " or ")))
	}
	return out
}
