package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// BenchmarkTenMillionLines runs a step that prints 10 million lines alone
// (sh, stdout to a file) and under the full runner (supervisor, log file,
// the runner following the log for progress), alternating, and reports the
// ratio of their times: the budget is within 5%.
//
//	go test ./runner -run XXX -bench TenMillionLines -benchtime 5x
func BenchmarkTenMillionLines(b *testing.B) {
	const script = "seq 10000000"
	var alone, sup, under time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		out, _ := os.Create(filepath.Join(dir, "alone.log"))
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdout, cmd.Stderr = out, out
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		alone += time.Since(t0)
		out.Close()

		// The supervisor by itself, no monitor: its own cost.
		exe0, _ := os.Executable()
		status := filepath.Join(dir, "sup.json")
		if err := exec.Command(exe0, supervise.Command, "--status", status, "--log", filepath.Join(dir, "sup.log"), "--", "sh", "-c", script).Run(); err != nil {
			b.Fatal(err)
		}
		st0, err := supervise.ReadStatus(status)
		if err != nil {
			b.Fatal(err)
		}
		sup += st0.Ended.Sub(st0.Started)

		path := filepath.Join(dir, "c.yaml")
		os.WriteFile(path, []byte("name: bench\nphases:\n  - id: flood\n    steps: [{run: '"+script+"'}]\n"), 0o644)
		p, err := campaign.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		exe, _ := os.Executable()
		r, err := New(p, Options{Self: []string{exe, supervise.Command}, StateDir: filepath.Join(dir, "state")})
		if err != nil {
			b.Fatal(err)
		}
		ev := r.Subscribe()
		r.Start()
		var st *State
		for e := range ev {
			if e.Kind == CampaignFinished {
				st = e.State
				break
			}
		}
		r.Close()
		for range ev {
		}
		s := st.Phase("flood").Steps[0]
		if s.Status != Done {
			b.Fatalf("flood %s: %s", s.Status, s.Reason)
		}
		under += s.Ended.Sub(s.Started)
	}
	b.ReportMetric(float64(alone.Milliseconds())/float64(b.N), "ms-alone/op")
	b.ReportMetric(float64(sup.Milliseconds())/float64(b.N), "ms-supervisor-only/op")
	b.ReportMetric(float64(under.Milliseconds())/float64(b.N), "ms-supervised/op")
	b.ReportMetric(float64(under)/float64(alone), "ratio")
}
