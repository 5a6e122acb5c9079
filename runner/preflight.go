package runner

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/runner/slurm"
)

// PreflightProblem is one thing that must be fixed before the campaign runs.
type PreflightProblem struct {
	What string // a sentence: what is wrong and what to do
	Warn bool   // true: said, but the campaign may run
}

// CheckPreflight checks the plan's preflight: commands on the PATH, free
// disk where the results go, endpoints answering, enough GPUs. gpuCount
// is -1 when the monitor cannot count GPUs.
func CheckPreflight(p *campaign.Plan, gpuCount int) []PreflightProblem {
	var out []PreflightProblem
	for _, c := range p.Preflight.Commands {
		if _, err := exec.LookPath(c); err != nil {
			out = append(out, PreflightProblem{What: fmt.Sprintf("command %q is not on the PATH; install it or fix PATH (preflight.commands)", c)})
		}
	}
	dir := filepath.Dir(p.Report)
	for ; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			break
		}
	}
	if free, total, err := diskFree(dir); err == nil {
		limit, what := p.Preflight.DiskFree, "preflight.disk_free"
		if limit == 0 {
			limit, what = total/20, "5% of the filesystem"
		}
		if free < limit {
			out = append(out, PreflightProblem{What: fmt.Sprintf("only %s free in %s, under %s (%s); free space or lower disk_free", format.Bytes(free), dir, format.Bytes(limit), what)})
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, u := range p.Preflight.HTTP {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := httpStatus(ctx, client, u)
		cancel()
		if code < 200 || code >= 300 {
			got := "no answer"
			if code > 0 {
				got = fmt.Sprintf("HTTP %d", code)
			}
			out = append(out, PreflightProblem{What: fmt.Sprintf("%s: %s within 5 s (preflight.http)", u, got)})
		}
	}
	out = append(out, slurmPreflight(p)...)
	if p.GPUs > 0 {
		switch {
		case gpuCount < 0:
			out = append(out, PreflightProblem{Warn: true, What: fmt.Sprintf("the campaign expects %d GPUs; no GPU source to count them", p.GPUs)})
		case gpuCount < p.GPUs:
			out = append(out, PreflightProblem{What: fmt.Sprintf("the campaign expects %d GPUs but %d are visible; check CUDA_VISIBLE_DEVICES, or lower gpus", p.GPUs, gpuCount)})
		case gpuCount > p.GPUs:
			out = append(out, PreflightProblem{Warn: true, What: fmt.Sprintf("%d GPUs visible, the campaign expects %d", gpuCount, p.GPUs)})
		}
	}
	return out
}

// PreflightError joins the problems that stop a run.
func PreflightError(ps []PreflightProblem) error {
	var lines []string
	for _, p := range ps {
		if !p.Warn {
			lines = append(lines, "  - "+p.What)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("preflight failed; nothing was started:\n%s", strings.Join(lines, "\n"))
}

// slurmPreflight checks what phases on Slurm need: sbatch on the PATH and
// their partitions in sinfo's list.
func slurmPreflight(p *campaign.Plan) []PreflightProblem {
	parts := map[string][]string{}
	onSlurm := false
	for _, ph := range p.Phases {
		if ph.Slurm != nil {
			onSlurm = true
			for _, g := range ph.Slurm.Groups {
				if g.Partition != "" {
					parts[g.Partition] = append(parts[g.Partition], ph.ID)
				}
			}
			if ph.Slurm.Partition != "" {
				parts[ph.Slurm.Partition] = append(parts[ph.Slurm.Partition], ph.ID)
			}
		}
	}
	if !onSlurm {
		return nil
	}
	if err := slurm.Available(); err != nil {
		return []PreflightProblem{{What: fmt.Sprintf("phases run as Slurm jobs (slurm:) but %v; run greenlight on a node of the cluster (a login node), or load Slurm's module", err)}}
	}
	have, err := slurm.Partitions(context.Background())
	if err != nil {
		return []PreflightProblem{{What: fmt.Sprintf("phases run as Slurm jobs but sinfo failed: %v; is slurmctld up (`sinfo`), and SLURM_CONF right?", err)}}
	}
	var out []PreflightProblem
	if fs := localFS(filepath.Dir(p.Report)); fs != "" {
		out = append(out, PreflightProblem{Warn: true, What: fmt.Sprintf("the results file and the state dir beside it are on %s, a filesystem of this machine only: a Slurm job on another node cannot write its log, results and status there (unless this machine is the node); put the campaign on a filesystem the nodes share (NFS, Lustre, GPFS, ...)", fs)})
	}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		if !slices.Contains(have, name) {
			out = append(out, PreflightProblem{What: fmt.Sprintf("Slurm has no partition %q (phases %s); sinfo lists: %s", name, strings.Join(parts[name], ", "), strings.Join(have, ", "))})
		}
	}
	return out
}

// localFS names the filesystem dir is on when it is one no other node can
// see (ext4, xfs, btrfs, tmpfs, overlay), "" when it may be shared or
// cannot be told.
func localFS(dir string) string {
	for ; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			break
		}
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return ""
	}
	switch uint32(st.Type) {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return ""
}
