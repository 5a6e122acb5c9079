// Command greenlight-supervise is the step supervisor alone (package
// runner/supervise): what `greenlight __supervise` is, without the
// window's libraries, whose start-up (package init) costs about 50 ms a
// step. The runner uses it when it lies beside greenlight (scripts/build
// puts it there), and `greenlight __supervise` otherwise.
package main

import (
	"os"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

func main() { os.Exit(supervise.Main(os.Args[1:])) }
