package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/secrets"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// maxArgsInput bounds what `mcpcage scan --args FILE` reads: a call's
// arguments are at most one message line.
const maxArgsInput = 64 << 20

// scanArgs checks an arguments object as a session checks every tools/call
// before it reaches the server: private keys, well-known token shapes, and
// the values of credentials mcpcage passes to the caged servers recorded
// under $MCPCAGE_HOME (other than --name's). FILE holds the arguments
// object, or a tools/call request or its params ({"name":..,"arguments":..}),
// which also names the tool for per-tool --allow-secret.
func scanArgs(opts *ScanOptions) error {
	allow, err := secrets.ParseAllow(opts.AllowSecret)
	if err != nil {
		return &ExitError{Code: exitScanError, Err: withHint(err, "e.g. --allow-secret github-token or --allow-secret private-key:write_file")}
	}
	var r io.Reader = opts.IO.In
	name := "stdin"
	if opts.Args != "-" {
		f, err := os.Open(opts.Args)
		if err != nil {
			return &ExitError{Code: exitScanError, Err: withHint(fmt.Errorf("cannot read %s: %v", opts.Args, unwrapPathErr(err)), "give a file holding a tool call's arguments object, or - for stdin")}
		}
		defer f.Close()
		r, name = f, opts.Args
	}
	data, err := io.ReadAll(io.LimitReader(r, maxArgsInput+1))
	if err != nil {
		return &ExitError{Code: exitScanError, Err: fmt.Errorf("cannot read %s: %v", name, err)}
	}
	if len(data) > maxArgsInput {
		return &ExitError{Code: exitScanError, Err: fmt.Errorf("%s is larger than %d MiB", name, maxArgsInput>>20)}
	}
	tool, args := callArguments(data)
	if !json.Valid(args) {
		return &ExitError{Code: exitScanError, Err: withHint(fmt.Errorf("%s is not JSON", name), `give an arguments object such as {"path":"notes.txt"}`)}
	}
	fs := secrets.Arguments(args, cagedCredentials(opts.Name, nil))
	refused := allow.Refused(tool, fs)
	if opts.JSON {
		out := struct {
			Tool     string               `json:"tool,omitempty"`
			Findings []secrets.ArgFinding `json:"findings"`
			Refused  int                  `json:"refused"`
		}{tool, append([]secrets.ArgFinding{}, fs...), len(refused)}
		if err := writeJSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		w := opts.IO.Out
		for _, f := range fs {
			mark := "refused"
			if allow.Permits(f.Kind, tool) {
				mark = "allowed"
			}
			untrusted.Fprintf(w, "    ! %-7s %-16s %s\n", mark, f.Kind, f.Describe())
		}
		switch {
		case len(fs) == 0:
			fmt.Fprintln(w, "no secrets in the arguments")
		case len(refused) > 0:
			fmt.Fprintf(w, "%d secret(s) in the arguments; a session would refuse the call (allow with --allow-secret KIND or KIND:TOOL)\n", len(refused))
		default:
			fmt.Fprintf(w, "%d secret(s) in the arguments, all allowed by --allow-secret\n", len(fs))
		}
	}
	if len(refused) > 0 {
		return &ExitError{Code: exitScanFound}
	}
	return nil
}

// callArguments takes the arguments out of a tools/call request or its
// params when data is one; else data is the arguments themselves.
func callArguments(data []byte) (tool string, args []byte) {
	var v struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &v) == nil && v.Method == "tools/call" && len(v.Params) > 0 {
		data = v.Params
	}
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(data, &p) == nil && p.Name != nil && len(p.Arguments) > 0 {
		return *p.Name, p.Arguments
	}
	return "", data
}

// cagedCredentials returns the credentials mcpcage passes to caged servers
// other than self, with values from mcpcage's own environment; selfEnv are
// self's --env names. Nothing is found when no server was ever run with
// --env, or when mcpcage's state cannot be read: the shapes still count.
func cagedCredentials(self string, selfEnv []string) []secrets.Credential {
	dir, err := home.Dir()
	if err != nil {
		return nil
	}
	return secrets.CagedCredentials(secrets.EnvRecords(dir), self, selfEnv, os.Getenv)
}
