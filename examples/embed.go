// Package examples holds the campaigns shipped with greenlight; the demo
// campaign is embedded in the binary.
package examples

import _ "embed"

// Demo is the campaign `greenlight demo` runs.
//
//go:embed demo/campaign.yaml
var Demo []byte
