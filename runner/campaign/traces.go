package campaign

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// TracesSpec tunes how profiler traces listed as artifacts are summarised
// in the results file:
//
//	traces:
//	  top: 15                      # kernels listed (default 10)
//	  categories:                  # category: regex on kernel names, case-insensitive
//	    GEMM: 'nvjet|cutlass|marlin'   # replaces the default GEMM rule
//	    sampler: 'sampling|argmax'     # a new category, tried before the defaults
//	  step: '^execute_model$'      # the annotation one step is (default: torch.profiler's ProfilerStep#N)
type TracesSpec struct {
	Top        int           `yaml:"top" json:"top,omitempty"`
	Categories yaml.MapSlice `yaml:"categories" json:"categories,omitempty"`
	Step       string        `yaml:"step" json:"step,omitempty"`
}

// Traces is TracesSpec checked.
type Traces struct {
	Top        int
	Categories []TraceCategory // in the file's order
	// Step is a regex on user annotations' names, each match one step
	// (the denominator of a trace diff's per-step figures); "" is
	// torch.profiler's ProfilerStep#N.
	Step string
}

// TraceCategory is one category rule from the campaign file.
type TraceCategory struct {
	Name    string
	Pattern string
}

func (l *loader) traces(spec *CampaignSpec, plan *Plan) {
	t := spec.Traces
	if t == nil {
		return
	}
	if t.Top < 0 || t.Top > 100 {
		l.add("$.traces.top", fmt.Sprintf("top %d: list 1 to 100 kernels", t.Top), "write `top: 10`")
	}
	plan.Traces.Top = t.Top
	if t.Step != "" {
		if _, err := regexp.Compile(t.Step); err != nil {
			l.add("$.traces.step", "invalid regex: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "), "a regex on the annotation one step is, as `record_function` names it: write step: '^execute_model$'")
		} else {
			plan.Traces.Step = t.Step
		}
	}
	for _, item := range t.Categories {
		name := strings.TrimSpace(fmt.Sprint(item.Key))
		at := "$.traces.categories." + name
		pat, ok := item.Value.(string)
		if !ok || strings.TrimSpace(pat) == "" {
			l.add(at, fmt.Sprintf("category %q needs a regex on kernel names", name), `write  GEMM: 'nvjet|cutlass'`)
			continue
		}
		if _, err := regexp.Compile(pat); err != nil {
			l.add(at, "invalid regex: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "), "Go regexp syntax (RE2); use single quotes in YAML")
			continue
		}
		plan.Traces.Categories = append(plan.Traces.Categories, TraceCategory{Name: name, Pattern: pat})
	}
}
