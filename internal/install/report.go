package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// reportMarker starts the one line of an install container's stdout that
// mcpcage reads. Everything in it was produced next to code we do not trust
// (package.json files, package metadata), so it is checked field by field.
const reportMarker = "MCPCAGE-REPORT "

// Report is the one line of results an install container prints.
type Report struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Command []string  `json:"command"`
	Skipped []Skipped `json:"skipped"`
	Failure *Failure  `json:"failure"`
	// Tree is every package npm installed, from its record of the tree
	// (npx only): where, which version, from where, with which hash.
	Tree []TreeEntry `json:"tree"`
}

// TreeEntry is one installed package of a tree.
type TreeEntry struct {
	Path      string `json:"path"`
	Version   string `json:"version"`
	Resolved  string `json:"resolved"`
	Integrity string `json:"integrity"`
}

// Skipped is a package whose install scripts were not run.
type Skipped struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Scripts []string `json:"scripts"`
}

// Failure is the driver's own classification of an installer error.
type Failure struct {
	Kind    string `json:"kind"`    // "not-found", "source-only", "no-command", "several-commands", "failed", "unreachable", "foreign"
	Package string `json:"package"` // the package it is about (may be a dependency)
	Detail  string `json:"detail"`
}

var (
	reportVersion = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,127}$`)
	commandName   = regexp.MustCompile(`^[A-Za-z0-9._@+-]{1,128}$`)
)

const (
	maxSkipped     = 10000
	maxTree        = 20000
	maxCommandArgs = 4
)

// ParseReport finds the last report line in out and validates it.
func ParseReport(out []byte) (*Report, error) { return parseReport(out, false) }

// parseReport is ParseReport; noCommand accepts a report without a command,
// for a package installed for a command the command line names (npx -p,
// uvx --from), which withBin then finds in the entry.
func parseReport(out []byte, noCommand bool) (*Report, error) {
	var line []byte
	for _, l := range bytes.Split(out, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(reportMarker)) {
			line = l[len(reportMarker):]
		}
	}
	if line == nil {
		return nil, errors.New("the install container gave no report")
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("the install container's report is malformed: %v", err)
	}
	if dec.More() {
		return nil, errors.New("the install container's report is malformed: trailing data")
	}
	if r.Failure != nil {
		r.Failure.Package = clean(r.Failure.Package, 214)
		r.Failure.Detail = clean(r.Failure.Detail, 400)
		switch r.Failure.Kind {
		case "not-found", "source-only", "no-command", "several-commands", "failed", "unreachable", "foreign":
		default:
			return nil, fmt.Errorf("the install container's report has an unknown failure kind %q", clean(r.Failure.Kind, 40))
		}
		return &r, nil
	}
	if !reportVersion.MatchString(r.Version) {
		return nil, fmt.Errorf("the installed package reports an invalid version %q", clean(r.Version, 64))
	}
	if (len(r.Command) == 0 && !noCommand) || len(r.Command) > maxCommandArgs {
		return nil, errors.New("the install container's report has no usable command")
	}
	for i, a := range r.Command {
		if i == 0 && (a == "node" || a == "python3") {
			continue
		}
		// The server's entry point must be inside the package mount: the
		// image's own programs are not the package's to choose.
		if !strings.HasPrefix(a, MountPoint+"/") || path.Clean(a) != a || strings.ContainsAny(a, "\x00\n\r") {
			return nil, fmt.Errorf("the install container reported a command outside %s: %q", MountPoint, clean(a, 200))
		}
		if !commandName.MatchString(path.Base(a)) {
			return nil, fmt.Errorf("the install container reported an odd command name %q", clean(a, 200))
		}
	}
	if len(r.Skipped) > maxSkipped {
		r.Skipped = r.Skipped[:maxSkipped]
	}
	for i := range r.Skipped {
		s := &r.Skipped[i]
		s.Name, s.Version = clean(s.Name, 214), clean(s.Version, 64)
		if len(s.Scripts) > 4 {
			s.Scripts = s.Scripts[:4]
		}
		for k := range s.Scripts {
			s.Scripts[k] = clean(s.Scripts[k], 40)
		}
	}
	if len(r.Tree) > maxTree {
		return nil, fmt.Errorf("the install container's report names more than %d installed packages", maxTree)
	}
	for i := range r.Tree {
		e := &r.Tree[i]
		e.Path, e.Version, e.Resolved, e.Integrity = clean(e.Path, 1024), clean(e.Version, 64), clean(e.Resolved, 2048), clean(e.Integrity, 200)
	}
	return &r, nil
}

// clean bounds text from a package to max runes and renders it for one
// line of a terminal with untrusted.Line, the one escaping function.
func clean(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			return untrusted.Line(s[:i]) + "…"
		}
		n++
	}
	return untrusted.Line(s)
}
