package main

import (
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// pinFlags are the run flags of pinning and tool filters.
var pinFlags struct {
	strict        bool
	tools, deny   []string
	readOnlyTools bool
}

// pinHighFindings counts the scanner's high-severity findings in one pinned
// item for the lock message; nil until the scanner wires itself in.
var pinHighFindings func(k pin.Kind, item []byte, list []jsontext.Value) int

// pinFlagged says whether the scanner finds signs at medium or above in one
// item: such a tool is never trusted on first use in a new client context.
var pinFlagged func(k pin.Kind, item []byte, list []jsontext.Value) bool

func init() {
	addRunExtension(runExtension{
		Order: 10,
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&pinFlags.strict, "strict", false, "ask for approval of the first list of tools too (no trust on first use)")
			fs.StringSliceVar(&pinFlags.tools, "tools", nil, "offer only these tools (comma-separated names)")
			fs.StringSliceVar(&pinFlags.deny, "deny-tools", nil, "hide these tools (comma-separated names)")
			fs.BoolVar(&pinFlags.readOnlyTools, "read-only-tools", false, "offer only tools annotated readOnlyHint: true (the disk is read-only anyway; this filters tools)")
		},
		Policy: func(rc *RunContext) (proxy.Policy, error) {
			return pin.New(pin.Config{
				Store:  pinStore(rc.Home),
				Name:   rc.Name,
				Launch: rc.Launch,
				Strict: pinFlags.strict,
				Filter: pin.Filter{
					Allow:    trimAll(pinFlags.tools),
					Deny:     trimAll(pinFlags.deny),
					ReadOnly: pinFlags.readOnlyTools,
				},
				HighFindings: pinHighFindings,
				Flagged:      pinFlagged,
				Event: func(kind string, fields map[string]any) {
					if rc.Audit != nil {
						rc.Audit(kind, fields)
					}
				},
			}), nil
		},
	})
}

func pinStore(home string) pin.Store { return pin.Store{Dir: filepath.Join(home, "pins")} }

func trimAll(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
