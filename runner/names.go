package runner

// Names the loop and its callers have always used, for what now lives in
// runner/campaign (the campaign file) and runner/supervise (the step
// supervisor): the loop runs a campaign.Plan under supervise.Main.
//
// The campaign file's types, from runner/campaign, under the names the
// loop and its callers have always used: the loop runs a campaign.Plan.

import (
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/files"
	"github.com/greenlight-run/greenlight/runner/format"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

type (
	Plan          = campaign.Plan
	Phase         = campaign.Phase
	Step          = campaign.Step
	Service       = campaign.Service
	Stage         = campaign.Stage
	Expect        = campaign.Expect
	Preflight     = campaign.Preflight
	FileError     = campaign.FileError
	FileErrors    = campaign.FileErrors
	PhaseIDError  = campaign.PhaseIDError
	CampaignSpec  = campaign.CampaignSpec
	Traces        = campaign.Traces
	TraceCategory = campaign.TraceCategory
	Slurm         = campaign.Slurm
)

// FormatVLLMBench is campaign.FormatVLLMBench.
const FormatVLLMBench = campaign.FormatVLLMBench

var (
	// Load reads and checks a campaign file (campaign.Load).
	Load = campaign.Load
	// Parse checks a campaign file's bytes (campaign.Parse).
	Parse = campaign.Parse
	// FormatBytes is format.Bytes.
	FormatBytes = format.Bytes
	// FormatDuration is format.Duration.
	FormatDuration = format.Duration
	// Count is format.Count.
	Count = format.Count
)

// The step supervisor, from runner/supervise, under its old names.
const SuperviseCommand = supervise.Command

type StepStatus = supervise.Status

var (
	// SuperviseMain is supervise.Main: the hidden subcommand's body.
	SuperviseMain = supervise.Main
	// StopGroup is supervise.StopGroup.
	StopGroup = supervise.StopGroup
	// WriteFileAtomic is files.WriteAtomic.
	WriteFileAtomic = files.WriteAtomic
)
