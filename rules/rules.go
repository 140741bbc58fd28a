// Package rules holds mcpcage's detection rules as data: one JSON file per
// category, embedded in the binary so that the rules a user runs are exactly
// the rules that were reviewed and tested. internal/scan parses and compiles
// them; the file format is documented there.
package rules

import "embed"

// Files holds every *.json rule file of this directory.
//
//go:embed *.json
var Files embed.FS
