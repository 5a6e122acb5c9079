package modelload

import (
	"regexp"
	"strconv"
)

// StageTime is one stage of a load and how long the server says it took.
type StageTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"s"`
}

// vllmLines are vLLM's own timing lines, across its versions, each with
// the stage it times. The first group is seconds.
var vllmLines = []struct {
	name string
	re   *regexp.Regexp
}{
	{"loading weights", regexp.MustCompile(`Loading weights took ([\d.]+) ?s`)},
	{"model loading", regexp.MustCompile(`Model loading took [\d.]+ ?GiB(?: memory)? and ([\d.]+) ?s`)},
	{"torch.compile", regexp.MustCompile(`torch\.compile takes ([\d.]+) ?s in total`)},
	{"memory profiling", regexp.MustCompile(`Memory profiling takes ([\d.]+) ?s`)},
	{"graph capture", regexp.MustCompile(`Graph capturing finished in ([\d.]+) ?s`)},
	{"engine init", regexp.MustCompile(`init engine(?: \(profile, create kv cache, warmup model\))? took ([\d.]+) ?s`)},
}

// VLLMStage reads one line of a vLLM server's log: the stage it times and
// the seconds, or ok false.
func VLLMStage(line []byte) (StageTime, bool) {
	if len(line) > 4096 {
		return StageTime{}, false
	}
	for _, v := range vllmLines {
		if m := v.re.FindSubmatch(line); m != nil {
			s, err := strconv.ParseFloat(string(m[1]), 64)
			if err != nil {
				return StageTime{}, false
			}
			return StageTime{Name: v.name, Seconds: s}, true
		}
	}
	return StageTime{}, false
}
