package main

import (
	"fmt"
	"github.com/greenlight-run/greenlight/runner/link"
	"io"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	find := func(file string) (string, *campaign.Plan, error) {
		plan, ok := loadPlan(file, stderr)
		if !ok {
			return "", nil, fmt.Errorf("%s: not a valid campaign file (above)", file)
		}
		var cfg link.Config
		if err := locate(plan, &cfg, io.Discard); err != nil {
			return "", nil, err
		}
		return record.Name(plan.Report), plan, nil
	}
	return compare.Command(args, find, parseAnywhere, stdout, stderr)
}
