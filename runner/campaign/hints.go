package campaign

import (
	"fmt"
	"regexp"
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
	return out
}
