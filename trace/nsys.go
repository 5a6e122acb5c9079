package trace

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// NsysCSV summarises the CSV `nsys stats --report cuda_gpu_kern_sum
// --format csv` prints (kern) and, when given, that of
// cuda_gpu_mem_time_sum (mem). Both header versions are read: Time (%),
// Total Time (ns), Instances, Avg (ns), Med (ns), Min (ns), Max (ns),
// StdDev (ns), Name; newer nsys adds GridXYZ and BlockXYZ (one row per
// launch shape: rows of one name are added up). nsys prints notes around
// the table; they are skipped.
func NsysCSV(kern, mem io.Reader, o Options) (*Summary, error) {
	a := newAgg()
	if err := readNsys(kern, a, false); err != nil {
		return nil, fmt.Errorf("cuda_gpu_kern_sum: %w", err)
	}
	if mem != nil {
		if err := readNsys(mem, a, true); err != nil {
			return nil, fmt.Errorf("cuda_gpu_mem_time_sum: %w", err)
		}
	}
	return a.summary(o.rules(), o.top()), nil
}

func readNsys(r io.Reader, a *agg, mem bool) error {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return err
	}
	// The table starts at its header line.
	start := -1
	for _, h := range []string{`"Time (%)"`, `Time (%)`} {
		if i := bytes.Index(b, []byte(h)); i >= 0 && (start < 0 || i < start) {
			start = i
		}
	}
	if start < 0 {
		if bytes.Contains(b, []byte("does not contain")) || bytes.Contains(b, []byte("SKIPPED")) {
			return nil // no CUDA activity of this kind in the report
		}
		return errors.New("no table with a \"Time (%)\" header in nsys's output")
	}
	cr := csv.NewReader(bytes.NewReader(b[start:]))
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return err
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	total, okT := col["Total Time (ns)"]
	inst, okI := col["Instances"]
	if !okI {
		inst, okI = col["Count"] // the memory report's name for it
	}
	name, okN := col["Name"]
	if !mem && !okN {
		name, okN = col["Operation"]
	}
	if mem {
		if n, ok := col["Operation"]; ok {
			name, okN = n, true
		}
	}
	if !okT || !okI || !okN {
		return fmt.Errorf("unknown header %q: want Total Time (ns), Instances (or Count), Name (or Operation)", strings.Join(head, ","))
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(rec) <= max(total, inst, name) {
			continue // a note after the table
		}
		ns, err1 := strconv.ParseFloat(strings.ReplaceAll(rec[total], ",", ""), 64)
		n, err2 := strconv.Atoi(strings.ReplaceAll(rec[inst], ",", ""))
		if err1 != nil || err2 != nil {
			continue
		}
		k := a.names[rec[name]]
		if k == nil {
			k = &kstat{mem: mem}
			a.names[rec[name]] = k
		}
		k.count += n
		k.total += ns / 1000
	}
}

// NsysFile runs `nsys stats` on a report (.nsys-rep) and summarises it.
// ErrNoNsys when nsys is not on the PATH.
func NsysFile(ctx context.Context, path string, o Options) (*Summary, error) {
	bin, err := exec.LookPath("nsys")
	if err != nil {
		return nil, ErrNoNsys
	}
	run := func(report string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "stats", "--report", report, "--format", "csv", "--force-export=false", path)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(errb.String())
			if len(msg) > 300 {
				msg = msg[len(msg)-300:]
			}
			return nil, fmt.Errorf("nsys stats --report %s: %v: %s", report, err, msg)
		}
		return out.Bytes(), nil
	}
	kern, err := run("cuda_gpu_kern_sum")
	if err != nil {
		return nil, err
	}
	mem, _ := run("cuda_gpu_mem_time_sum") // absent in reports without memory activity
	var memR io.Reader
	if mem != nil {
		memR = bytes.NewReader(mem)
	}
	s, err := NsysCSV(bytes.NewReader(kern), memR, o)
	if err != nil {
		return nil, err
	}
	s.File, s.Rank = path, RankOf(path)
	return s, nil
}

// ErrNoNsys means nsys is not on the PATH.
var ErrNoNsys = errors.New("nsys is not on the PATH: .nsys-rep files are listed, not summarised")
