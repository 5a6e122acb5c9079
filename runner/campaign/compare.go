package campaign

import (
	"fmt"
	"strconv"
	"strings"
)

// conditions resolves conditions:, baseline: and compare: (the record's
// conditions and what the campaign is held against).
func (l *loader) conditions(spec *CampaignSpec, plan *Plan) {
	if c := spec.Conditions; c != nil {
		for i, cmd := range c.Commands {
			if strings.TrimSpace(cmd) == "" {
				l.add(fmt.Sprintf("$.conditions.commands[%d]", i), "empty command", `give a command whose output is worth keeping, e.g. python3 -c "import vllm; print(vllm.__version__)"`)
			}
		}
		for i, p := range c.Packages {
			if strings.TrimSpace(p) == "" || strings.ContainsAny(p, " \t=<>") {
				l.add(fmt.Sprintf("$.conditions.packages[%d]", i), fmt.Sprintf("%q is not a package name", p), "list Python package names as pip list shows them: [vllm, torch]")
			}
		}
		plan.Conditions = Conditions{Commands: c.Commands, Packages: c.Packages}
	}
	plan.Compare.Tolerance = 0.02
	if b := strings.TrimSpace(spec.Baseline); b != "" {
		plan.Compare.Baseline = l.abs(plan.Dir, l.expand("$.baseline", b, plan.Env))
	}
	if c := spec.Compare; c != nil {
		if c.Tolerance != "" {
			f, err := ParsePercent(c.Tolerance)
			if err != nil {
				l.add("$.compare.tolerance", err.Error(), "write tolerance: 2% (a change within it, without repeats to judge noise by, is no change)")
			}
			plan.Compare.Tolerance = f
		}
		for from, to := range c.Rename {
			if strings.TrimSpace(to) == "" {
				l.add("$.compare.rename."+from, fmt.Sprintf("%s is renamed to nothing", from), "write old_name: new_name")
			}
		}
		plan.Compare.Rename = c.Rename
	}
}

// ParsePercent reads "2%" (or "2 %") as 0.02; the % is required, so
// that 2 and 0.02 are never confused.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if !strings.HasSuffix(t, "%") {
		return 0, fmt.Errorf("%q is not a percentage (write it with %%, e.g. 2%%)", s)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil || f < 0 || f >= 1000 {
		return 0, fmt.Errorf("%q is not a percentage between 0%% and 1000%%", s)
	}
	return f / 100, nil
}
