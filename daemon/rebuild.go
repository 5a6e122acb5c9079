package daemon

import (
	"fmt"
	"os"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Rebuild writes the campaign's record from its campaign file and state
// dir alone (`greenlight report`), with what the runner kept there: the
// journal's state, the environment, the services' scrapes, the conditions
// and the baseline. warns are what the record goes without.
func Rebuild(plan *campaign.Plan, dir string) (warns []string, err error) {
	st, err := runner.Replay(plan, dir)
	if err != nil {
		return nil, err
	}
	env, err := report.LoadEnv(dir)
	if err != nil {
		host, _ := os.Hostname()
		env = report.Env{Host: host, Inventory: gpu.Inventory{Source: "none", Why: "GPU inventory " + err.Error()}}
	}
	w := report.NewWriter(plan.Report, plan, env, nil, dir)
	w.SetServers(KeptServers(plan, dir))
	if book, ok, err := conditions.Load(dir); err != nil {
		warns = append(warns, fmt.Sprintf("%v; the record has no conditions", err))
	} else if ok {
		w.SetConditions(book)
	}
	if note, warn := GiveBaseline(plan, w); warn {
		warns = append(warns, note)
	}
	return warns, w.Write(st)
}
