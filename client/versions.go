package client

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner/state"
)

// ReportVersions (greenlight report --versions, --version N) lists the versions of the results file kept in the state
// dir, or prints version n.
func ReportVersions(dir string, n int, stdout, stderr io.Writer) int {
	list, err := mdfile.ListVersions(dir)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight report: %v\n", err)
		return state.ExitFailed
	}
	if n > 0 {
		for _, v := range list {
			if v.N == n {
				b, err := os.ReadFile(v.Path)
				if err != nil {
					fmt.Fprintf(stderr, "greenlight report: %v\n", err)
					return state.ExitFailed
				}
				stdout.Write(b)
				return state.ExitOK
			}
		}
		fmt.Fprintf(stderr, "greenlight report: no version %d in %s (greenlight report --versions lists them)\n", n, filepath.Join(dir, "versions"))
		return state.ExitUsage
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no version of the results file kept in %s: no write has replaced a save of yours\n", dir)
		return state.ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tkept at\tsize\tlines\twhat it is")
	for _, v := range list {
		lines := 0
		if b, err := os.ReadFile(v.Path); err == nil {
			lines = strings.Count(string(b), "\n")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", v.N, v.Time.Local().Format("2006-01-02 15:04:05.000"), format.Bytes(uint64(v.Size)), lines, mdfile.WhyKept(v.Why))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d versions in %s; get one back with: greenlight report --version N CAMPAIGN.yaml > recovered.md\n", len(list), filepath.Join(dir, "versions"))
	return state.ExitOK
}
