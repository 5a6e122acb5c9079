package campaign

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RepeatSpec is `repeat:` as written: a number of runs (repeat: 3), or
// runs until the point's metrics are measured tightly enough:
//
//	repeat: {until: 2%, max: 10}   # at least 3 runs (min:), at most 10
//
// A point stops once every one of its metrics' 95% intervals is within
// until of its mean; one that never gets there stops at max, said.
type RepeatSpec struct {
	N     int    `yaml:"-" json:"-"`
	Until string `yaml:"until" json:"until,omitempty"`
	Min   int    `yaml:"min" json:"min,omitempty"`
	Max   int    `yaml:"max" json:"max,omitempty"`
	Bad   string `yaml:"-" json:"-"` // neither a number nor a mapping
}

// UnmarshalYAML takes a number or the mapping, decoded strictly.
func (r *RepeatSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var n int
	if unmarshal(&n) == nil {
		*r = RepeatSpec{N: n}
		return nil
	}
	var word string
	if unmarshal(&word) == nil {
		*r = RepeatSpec{Bad: word}
		return nil
	}
	type plain RepeatSpec
	return unmarshal((*plain)(r))
}

// MarshalJSON keeps `repeat: N` the number it was (a phase's work hash
// is made of it).
func (r RepeatSpec) MarshalJSON() ([]byte, error) {
	if r.Until == "" && r.Min == 0 && r.Max == 0 {
		return []byte(strconv.Itoa(r.N)), nil
	}
	return fmt.Appendf(nil, `{"until":%q,"min":%d,"max":%d}`, r.Until, r.Min, r.Max), nil
}

// Repeats is a resolved repeat: a point's runs at least and at most, and
// the precision that stops it between the two (0: it runs Max times).
type Repeats struct {
	Min, Max  int
	Precision float64 // a share of the mean: 0.02
}

// repeats resolves a phase's repeat: (nil: once).
func (l *loader) repeats(r *RepeatSpec, at func(string) string) Repeats {
	switch {
	case r == nil:
		return Repeats{Min: 1, Max: 1}
	case r.Bad != "":
		l.add(at(".repeat"), fmt.Sprintf("repeat: %q is neither a number of runs nor a mapping", r.Bad), "write repeat: 3, or repeat: {until: 2%, max: 10}")
		return Repeats{Min: 1, Max: 1}
	case r.Until == "" && r.Min == 0 && r.Max == 0:
		if r.N < 1 {
			l.add(at(".repeat"), fmt.Sprintf("repeat: %d runs nothing", r.N), "repeat: N runs each point N times (1 or more); leave it out for once")
			return Repeats{Min: 1, Max: 1}
		}
		return Repeats{Min: r.N, Max: r.N}
	}
	out := Repeats{Min: 3, Max: r.Max}
	if r.Min != 0 {
		out.Min = r.Min
	}
	f, err := ParsePercent(r.Until)
	switch {
	case strings.TrimSpace(r.Until) == "":
		l.add(at(".repeat"), "repeat: with min: or max: but no until: says when to stop", "write repeat: {until: 2%, max: 10}, or repeat: N for a fixed number")
	case err != nil || f <= 0 || f >= 1:
		l.add(at(".repeat.until"), fmt.Sprintf("until: %q is not a percentage", r.Until), "write until: 2% (a point stops once each metric's 95% interval is within 2% of its mean)")
	default:
		out.Precision = f
	}
	switch {
	case r.Max == 0:
		l.add(at(".repeat"), "repeat: until: needs max:, the most runs a point may take", "write repeat: {until: 2%, max: 10}")
		out.Max = max(out.Min, 10)
	case out.Min < 2:
		l.add(at(".repeat.min"), fmt.Sprintf("min: %d gives no interval to judge by", out.Min), "min: 2 or more (3 is the default)")
	case r.Max < out.Min:
		l.add(at(".repeat.max"), fmt.Sprintf("max: %d is below min: %d", r.Max, out.Min), "max: is the most runs a point may take")
		out.Max = out.Min
	}
	return out
}

// Rule is repeat: until:'s rule in words: "every metric's 95% interval
// within 2% of its mean", as the runner's skip reason, its warning and
// the record say it.
func (r Repeats) Rule() string {
	return fmt.Sprintf("every metric's 95%% interval within %g%% of its mean", math.Round(r.Precision*1e4)/100)
}

// Share is until:'s precision in words: "2%".
func (r Repeats) Share() string { return fmt.Sprintf("%g%%", math.Round(r.Precision*1e4)/100) }
