package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/secrets"
)

// allowSecretFlag is `mcpcage run --allow-secret`: kinds of secret (KIND, or
// KIND:TOOL for one tool) that tool-call arguments may carry to the server.
var allowSecretFlag []string

func init() {
	addRunExtension(runExtension{
		// After the pins (10), which answer for tools that are not there,
		// before the scanner (20) and the audit (30), so a refused call
		// is recorded as refused.
		Order: 15,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringArrayVar(&allowSecretFlag, "allow-secret", nil, "let tool-call arguments carry a secret of this `KIND` to the server, or KIND:TOOL for one tool (kinds: "+strings.Join(secrets.Kinds, ", ")+"); repeatable")
		},
		Check: func() error {
			_, err := secrets.ParseAllow(allowSecretFlag)
			if err != nil {
				return withHint(err, "e.g. --allow-secret private-key:write_file")
			}
			return nil
		},
		Policy: func(rc *RunContext) (proxy.Policy, error) {
			allow, err := secrets.ParseAllow(allowSecretFlag)
			if err != nil {
				return nil, err
			}
			return guard.NewArgSecrets(guard.SecretsConfig{
				Name: rc.Name, Home: rc.Home, Env: rc.Env, Allow: allow, Stderr: rc.IO.ErrOut,
				// rc.Audit is set when the audit policy is built, after
				// this one: read it when an event happens.
				Event: func(kind string, fields map[string]any) {
					if rc.Audit != nil {
						rc.Audit(kind, fields)
					}
				},
			})
		},
	})
}
