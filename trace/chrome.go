// Package trace summarises GPU profiles where the time went: torch.profiler
// (kineto) Chrome traces, read as a stream, and nsys reports through
// `nsys stats`. It imports nothing of ours: report renders what it finds.
package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/internal/tracefile"
)

// Summary is one trace (one rank's) summarised.
type Summary struct {
	File      string  `json:"file"`
	Rank      string  `json:"rank"`
	Bytes     int64   `json:"bytes"`      // of the file as stored
	Kernels   int     `json:"kernels"`    // kernel launches
	KernelUS  float64 `json:"kernel_us"`  // GPU kernel time, µs
	MemoryUS  float64 `json:"memory_us"`  // memcpy and memset time, µs
	MemoryOps int     `json:"memory_ops"` // memcpy and memset count
	WindowUS  float64 `json:"window_us"`  // first GPU activity to last, µs
	BusyUS    float64 `json:"busy_us"`    // time any GPU activity ran (their union), µs
	Top       []Kernel
	Other     Kernel // the kernels below Top, together
	Cats      []Cat
	Streams   []Stream
	Err       string `json:"err,omitempty"` // why the summary is partial (a damaged or truncated trace)
	// Late counts activities that came out of order by more than the
	// reader's window: busy time and gaps are then approximate.
	Late int `json:"late,omitempty"`
	// Steps are the profiler's step marks in the trace (prof.step(),
	// "ProfilerStep#N"): a per-step figure divides by Steps. 0 where the
	// trace has none (vLLM's server profiler marks no steps): figures are
	// then per capture. StepUS is the median step's span, on the GPU's
	// timeline where the trace has the marks' copies there (first
	// activity to last: kernels and the idle between them), else the
	// host's (which a profiler's own overhead inflates).
	Steps     int     `json:"steps,omitempty"`
	StepUS    float64 `json:"step_us,omitempty"`
	StepBasis string  `json:"step_basis,omitempty"` // "GPU" or "host"
}

// Kernel is one kernel name's launches.
type Kernel struct {
	Name    string  `json:"name"`
	Short   string  `json:"short"`
	Cat     string  `json:"cat"`
	Count   int     `json:"count"`
	TotalUS float64 `json:"total_us"`
}

// Cat is one category's time.
type Cat struct {
	Name    string  `json:"name"`
	Count   int     `json:"count"`
	TotalUS float64 `json:"total_us"`
}

// Stream is one CUDA stream's activity and the idle gaps between it.
type Stream struct {
	ID     string  `json:"id"`
	Events int     `json:"events"`
	BusyUS float64 `json:"busy_us"`
	GapUS  float64 `json:"gap_us"` // idle between its first and last activity
	Gaps   []Gap   `json:"gaps"`   // the largest, largest first
}

// Gap is an idle stretch on a stream.
type Gap struct {
	AtUS  float64 `json:"at_us"` // from the window's start
	DurUS float64 `json:"dur_us"`
}

// Options tune a summary.
type Options struct {
	// Step matches the user annotation one step is, each match a step;
	// nil: torch.profiler's ProfilerStep#N.
	Step     *regexp.Regexp
	Rules    *Rules               // nil: DefaultRules
	Top      int                  // kernels listed; 0: 10
	Progress func(read, of int64) // bytes of the file read so far, now and then
}

// File summarises the trace at path (.json or .json.gz). A damaged or
// truncated trace gives what was read before the damage, with Err set.
func File(path string, o Options) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	counted := &countingReader{r: f, of: fi.Size(), progress: o.Progress}
	buffered := bufio.NewReaderSize(counted, 64<<10)
	var r io.Reader = buffered
	// A gzip stream is known by its magic bytes, whatever its name says (a
	// trace gzipped by hand and left named .json, or the other way round).
	if magic, _ := buffered.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(buffered)
		if err != nil {
			return &Summary{File: path, Rank: RankOf(path), Bytes: fi.Size(), Err: "a damaged gzip stream: " + err.Error()}, nil
		}
		defer gz.Close()
		r = gz
	}
	s, err := Chrome(r, o)
	if err == nil {
		// The JSON is whole; the gzip stream's end (its checksum) says
		// whether the file is.
		if _, derr := io.Copy(io.Discard, r); derr != nil {
			err = derr
		}
	}
	if s == nil {
		return nil, err
	}
	s.File, s.Rank, s.Bytes = path, RankOf(path), fi.Size()
	if err != nil {
		s.Err = err.Error()
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) {
			s.Err = errTruncated.Error()
		}
	}
	return s, nil
}

type countingReader struct {
	r        io.Reader
	n, of    int64
	last     int64
	progress func(read, of int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && (c.n-c.last >= 32<<20 || err != nil) {
		c.last = c.n
		c.progress(c.n, c.of)
	}
	return n, err
}

type interval struct{ start, end float64 }

// maxName bounds a kernel's name as it is kept, matched and shown; maxKey
// a key, a category, a phase letter or a stream id (longer is no match).
const (
	maxName = 4 << 10
	maxKey  = 256
)

type kstat struct {
	count int
	total float64
	mem   bool
}

// Chrome summarises a Chrome trace read from r. On a damaged stream it
// returns what it had with the error.
func Chrome(r io.Reader, o Options) (*Summary, error) {
	a := newAgg()
	a.step = o.Step
	err := a.read(newScanner(r))
	s := a.summary(o.rules(), o.top())
	if err == nil && a.events == 0 {
		err = errors.New("no traceEvents in it: not a torch.profiler trace?")
	}
	return s, err
}

// profilerStep begins the name of torch.profiler's step annotations:
// "ProfilerStep#12".
var profilerStep = []byte("ProfilerStep#")

type agg struct {
	step      *regexp.Regexp // Options.Step
	hostSteps []float64      // ProfilerStep# annotations' durations, µs
	gpuSteps  []float64      // their copies on the GPU's timeline
	names     map[string]*kstat
	streams   map[string]*window // by device/stream
	all       *window            // every stream's activity: the busy union
	events    int
}

func newAgg() *agg {
	return &agg{names: map[string]*kstat{}, streams: map[string]*window{}, all: newWindow(false)}
}

func (o Options) rules() *Rules {
	if o.Rules == nil {
		return DefaultRules()
	}
	return o.Rules
}

func (o Options) top() int {
	if o.Top <= 0 {
		return 10
	}
	return o.Top
}

func (a *agg) read(s *scanner) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == '[' { // the JSON Array Format: the events alone
		return a.events_(s)
	}
	if c != '{' {
		return s.fail("it does not start with { or [")
	}
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == '}' {
			return nil
		}
		if c == ',' {
			continue
		}
		if c != '"' {
			return s.fail("expected a key")
		}
		key, err := s.strMax(maxKey)
		if err != nil {
			return err
		}
		isEvents := string(key) == "traceEvents"
		if c, err = s.next(); err != nil {
			return err
		} else if c != ':' {
			return s.fail("expected :")
		}
		if c, err = s.next(); err != nil {
			return err
		}
		if isEvents && c == '[' {
			if err := a.events_(s); err != nil {
				return err
			}
			continue
		}
		if err := s.skip(c); err != nil {
			return err
		}
	}
}

var (
	kPh, kCat, kName, kTs, kDur, kTid, kPid = []byte("ph"), []byte("cat"), []byte("name"), []byte("ts"), []byte("dur"), []byte("tid"), []byte("pid")
)

// events_ reads the event array whose [ is consumed.
func (a *agg) events_(s *scanner) error {
	var name, tid, pid, key []byte // each event's, reused
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case ']':
			return nil
		case ',':
			continue
		case '{':
		default:
			return s.fail("expected an event")
		}
		a.events++
		var ph, cat byte // first bytes: X; k/K kernel, g gpu_memcpy/gpu_memset
		var catMem bool
		var ts, dur float64
		tid, pid = tid[:0], pid[:0]
		name = name[:0]
		for {
			c, err := s.next()
			if err != nil {
				return err
			}
			if c == '}' {
				break
			}
			if c == ',' {
				continue
			}
			if c != '"' {
				return s.fail("expected a key in an event")
			}
			key, err := s.strMax(maxKey)
			if err != nil {
				return err
			}
			// key is overwritten by the next read: decide now.
			var which int
			switch {
			case bytes.Equal(key, kPh):
				which = 1
			case bytes.Equal(key, kCat):
				which = 2
			case bytes.Equal(key, kName):
				which = 3
			case bytes.Equal(key, kTs):
				which = 4
			case bytes.Equal(key, kDur):
				which = 5
			case bytes.Equal(key, kTid):
				which = 6
			case bytes.Equal(key, kPid):
				which = 7
			}
			if c, err = s.next(); err != nil {
				return err
			} else if c != ':' {
				return s.fail("expected : in an event")
			}
			if c, err = s.next(); err != nil {
				return err
			}
			switch {
			case which >= 1 && which <= 3 && c == '"':
				limit := maxKey // ph, cat
				if which == 3 {
					limit = maxName
				}
				v, err := s.strMax(limit)
				if err != nil {
					return err
				}
				switch which {
				case 1:
					if len(v) == 1 {
						ph = v[0]
					}
				case 2:
					cat = 0
					if bytes.EqualFold(v, []byte("kernel")) {
						cat = 'k'
					} else if bytes.Equal(v, []byte("user_annotation")) {
						cat = 'u'
					} else if bytes.Equal(v, []byte("gpu_user_annotation")) {
						cat = 'G'
					} else if bytes.Equal(v, []byte("gpu_memcpy")) || bytes.Equal(v, []byte("gpu_memset")) {
						cat, catMem = 'g', true
					}
				case 3:
					// Names are matched and shown through a bounded prefix:
					// a 50 MB name costs neither the regexes nor the map.
					name = append(name, v[:min(len(v), maxName)]...)
				}
			case (which == 4 || which == 5) && (c == '-' || c >= '0' && c <= '9'):
				v, err := s.number(c)
				if err != nil {
					return err
				}
				if which == 4 {
					ts = v
				} else {
					dur = v
				}
			case (which == 6 || which == 7) && c == '"':
				v, err := s.strMax(maxKey)
				if err != nil {
					return err
				}
				if which == 6 {
					tid = append(tid[:0], v...)
				} else {
					pid = append(pid[:0], v...)
				}
			case (which == 6 || which == 7) && (c == '-' || c >= '0' && c <= '9'):
				v, err := s.number(c)
				if err != nil {
					return err
				}
				// Into the event's own buffer: no allocation for the most
				// common of keys.
				if which == 6 {
					tid = appendID(tid[:0], v)
				} else {
					pid = appendID(pid[:0], v)
				}
			default:
				if err := s.skip(c); err != nil {
					return err
				}
			}
		}
		if ph != 'X' || cat == 0 || dur < 0 {
			continue
		}
		if cat == 'u' || cat == 'G' {
			// The profiler's step marks (prof.step()): the host's, and
			// their copies on the GPU's timeline, each step's span there.
			if a.step != nil && a.step.Match(name) || a.step == nil && bytes.HasPrefix(name, profilerStep) {
				if cat == 'u' {
					a.hostSteps = append(a.hostSteps, dur)
				} else {
					a.gpuSteps = append(a.gpuSteps, dur)
				}
			}
			continue
		}
		k := a.names[string(name)]
		if k == nil {
			k = &kstat{mem: catMem}
			a.names[string(name)] = k
		}
		k.count++
		k.total += dur
		// A stream is a device's: one trace holding two GPUs has two
		// stream 7s, and they do not overlap each other's gaps.
		key = append(key[:0], tid...)
		if len(pid) > 0 {
			key = append(append(append(key[:0], pid...), '/'), tid...)
		}
		w := a.streams[string(key)] // looked up without a copy
		if w == nil {
			w = newWindow(true)
			a.streams[string(key)] = w
		}
		iv := interval{ts, ts + dur}
		w.add(iv)
		a.all.add(iv)
	}
}

// appendID writes a numeric pid or tid: a whole number as one (a pid of
// 2145839 is not 2.145839e+06), anything else as its shortest float.
func appendID(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// IsTrace says which files Any summarises: torch.profiler traces as
// tensorboard_trace_handler names them, and nsys reports.
func IsTrace(path string) bool { return tracefile.Is(path) }

// Any summarises a trace or an nsys report by its name. A file of which
// nothing could be read is an error; one read in part is a summary with
// Err set.
func Any(ctx context.Context, path string, o Options) (*Summary, error) {
	var s *Summary
	var err error
	if strings.HasSuffix(path, ".nsys-rep") {
		s, err = NsysFile(ctx, path, o)
	} else {
		s, err = File(path, o)
	}
	if err == nil && s.Err != "" && s.Kernels == 0 && s.MemoryOps == 0 {
		return nil, errors.New(s.Err)
	}
	return s, err
}
