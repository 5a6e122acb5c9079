package report

import (
	"fmt"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
)

// notesBlock is the person's notes (greenlight note, n in the window),
// each with when it was said: facts of the journal, escaped as any text
// that did not come from greenlight.
func notesBlock(notes []runner.Note) string {
	var b strings.Builder
	b.WriteString("## Notes\n\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "- **%s** %s\n", n.T.UTC().Format(timeFmt), cell(n.Text))
	}
	return b.String()
}
