package report

// The key result of a phase: what a person would quote from it, in the
// header's table.

import (
	"fmt"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
)

// keyResult is what a person would quote from the phase: the latest value
// checked against an expectation, else the latest rate (TFLOP/s, tok_s),
// else the latest number.
func keyResult(p runner.PhaseState) string {
	s, _, _ := keyOf(p)
	return s
}

// keyOf is the key result, its metric and the step that gave it (-1:
// none).
func keyOf(p runner.PhaseState) (text, metric string, step int) {
	for pass := 0; pass < 3; pass++ {
		for i := len(p.Steps) - 1; i >= 0; i-- {
			rows := p.Steps[i].Results
			for j := len(rows) - 1; j >= 0; j-- {
				if s, m := rowKey(&rows[j], pass); s != "" {
					return s, m, i
				}
			}
		}
	}
	return "", "", -1
}

func rowKey(last *runner.Row, pass int) (string, string) {
	switch pass {
	case 0: // the first checked column
		if len(last.Checks) > 0 {
			ch := last.Checks[0]
			mark := "✓"
			if !ch.Pass {
				mark = "✗"
			}
			return fmt.Sprintf("%s = %s %s", ch.Expect.Column, FormatNumber(ch.Value), mark), ch.Expect.Column
		}
	case 1:
		for i, c := range last.Cols {
			if f, ok := last.Values[i].(float64); ok && (strings.Contains(c, "/s") || strings.HasSuffix(c, "_s")) {
				return fmt.Sprintf("%s = %s", c, FormatNumber(f)), c
			}
		}
	default:
		for i := len(last.Values) - 1; i >= 0; i-- {
			if f, ok := last.Values[i].(float64); ok {
				return fmt.Sprintf("%s = %s", last.Cols[i], FormatNumber(f)), last.Cols[i]
			}
		}
	}
	return "", ""
}
