package state

import (
	"path/filepath"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Layout is a campaign's state dir, one method per thing in it, so that
// every package names them the same way:
//
//	journal.jsonl    every transition, fsynced (the runner's)
//	history.json     step durations, for ETAs
//	lock             held by the campaign's runner; says its pid
//	runner.log       the runner's own lines
//	runner.sock      the runner's socket (runner/link)
//	steps/PHASE/aN-sM[-tK]/   a step's log, status file, results, summary
//	artifacts/PHASE/ what a phase's steps leave there
//	metrics/SERVICE.jsonl  a service's /metrics scrapes, a line each
type Layout string

// Root is the state dir itself.
func (l Layout) Root() string { return string(l) }

// Journal is the append-only journal.
func (l Layout) Journal() string { return filepath.Join(string(l), "journal.jsonl") }

// History is the step-duration history.
func (l Layout) History() string { return filepath.Join(string(l), "history.json") }

// Lock is the runner's lock file.
func (l Layout) Lock() string { return filepath.Join(string(l), "lock") }

// RunnerLog is the runner process's own lines.
func (l Layout) RunnerLog() string { return filepath.Join(string(l), "runner.log") }

// WindowStderr keeps what was written to stderr while a window was up.
func (l Layout) WindowStderr() string { return filepath.Join(string(l), "window-stderr.log") }

// Steps holds each step's folder, by phase.
func (l Layout) Steps() string { return filepath.Join(string(l), "steps") }

// StepStatusFiles is a glob of every step's status file.
func (l Layout) StepStatusFiles() string {
	return filepath.Join(string(l), "steps", "*", "*", "status.json")
}

// Artifacts holds each phase's artifact folder.
func (l Layout) Artifacts() string { return filepath.Join(string(l), "artifacts") }

// Loads is where each service load's measures are kept (Load).
func (l Layout) Loads() string { return filepath.Join(string(l), "loads.jsonl") }

// Metrics is where a service's /metrics scrapes are kept.
func (l Layout) Metrics(service string) string {
	return filepath.Join(string(l), "metrics", service+".jsonl")
}

// DefaultStateDir is where a campaign's state lives unless --state-dir
// says: .greenlight/NAME beside its results file.
func DefaultStateDir(p *campaign.Plan) string {
	return filepath.Join(filepath.Dir(p.Report), ".greenlight", campaign.SafeName(p.Name))
}
