// Package tracefile says which files are profiler traces, by name: the one
// rule the runner (a capture's flush counts ranks' traces) and the trace
// reader share.
package tracefile

import "strings"

// Is says a path names a profiler trace: torch.profiler's
// (`*.pt.trace.json`, gzipped or not, as tensorboard_trace_handler and
// vLLM name them, one per rank) or an nsys report.
func Is(path string) bool {
	return strings.HasSuffix(path, ".pt.trace.json") || strings.HasSuffix(path, ".pt.trace.json.gz") ||
		strings.HasSuffix(path, ".nsys-rep")
}
