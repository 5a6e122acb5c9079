// Package statedir decides where a campaign's state lives: the one
// resolution of --state-dir (given, remembered from the campaign's last
// runner, or the default beside the results file), always absolute.
package statedir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// pointerName is the file, in the default state dir, that names the state
// dir a runner was started with when that was another (--state-dir).
const pointerName = "state-dir-elsewhere"

// Resolve is the campaign's state dir: flag when given; else the one its
// last runner was started with (--state-dir, remembered by Remember),
// when the default dir holds no journal of its own; else the default.
// note says a remembered dir was used, or that flag differs from it.
func Resolve(plan *campaign.Plan, flag string) (dir, note string, err error) {
	def, err := filepath.Abs(state.DefaultStateDir(plan))
	if err != nil {
		return "", "", err
	}
	remembered := ""
	if _, err := os.Stat(state.Layout(def).Journal()); err != nil {
		if b, err := os.ReadFile(filepath.Join(def, pointerName)); err == nil {
			if d := strings.TrimSpace(string(b)); filepath.IsAbs(d) {
				if _, err := os.Stat(state.Layout(d).Journal()); err == nil {
					remembered = d
				}
			}
		}
	}
	if flag != "" {
		abs, err := filepath.Abs(flag)
		if err != nil {
			return "", "", fmt.Errorf("--state-dir: %v", err)
		}
		if remembered != "" && remembered != abs {
			note = fmt.Sprintf("--state-dir %s, where the campaign was last started with --state-dir %s", abs, remembered)
		}
		return abs, note, nil
	}
	if remembered != "" {
		return remembered, fmt.Sprintf("--state-dir %s, as the campaign was started with (give --state-dir to change it)", remembered), nil
	}
	return def, "", nil
}

// Remember notes, in the default state dir, that the campaign runs from
// dir, so that a later command without --state-dir finds it. Nothing is
// noted when dir is the default, or the default holds a campaign of its
// own.
func Remember(plan *campaign.Plan, dir string) error {
	def, err := filepath.Abs(state.DefaultStateDir(plan))
	if err != nil || def == dir {
		return err
	}
	if _, err := os.Stat(state.Layout(def).Journal()); err == nil {
		return nil
	}
	if err := os.MkdirAll(def, 0o755); err != nil {
		return err
	}
	return files.WriteAtomic(filepath.Join(def, pointerName), []byte(dir+"\n"))
}
