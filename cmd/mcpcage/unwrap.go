package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/secrets"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// UnwrapOptions are the inputs of `mcpcage unwrap`.
type UnwrapOptions struct {
	ProtectOptions
}

func newUnwrapCmd(io *IOStreams, h Hooks) *cobra.Command {
	opts := &UnwrapOptions{ProtectOptions{IO: io, BeforeRename: h.BeforeRename}}
	cmd := &cobra.Command{
		Use:   "unwrap [--client NAME]... [--yes]",
		Short: "Restore the original command of every caged server in your clients' configurations",
		Long: `unwrap puts back the command and args that protect --fix replaced, in every
client configuration (or only those of --client). The original command is
what follows "--" in the caged entry's args, so it works without backups,
and it leaves alone any other change made to the file since. A file that
was only caged and unwrapped is byte for byte what it was.

Only entries protect --fix caged on this machine, around the same
command, are restored; any other caged entry (one planted in a cloned
repository's .mcp.json, say) is listed and left as it is.

Exit status: 0 when the entries were restored (or none was caged); 1 on an
error, when the prompt was declined, or when a file changed while mcpcage
was writing it; 2 for a usage error, or no terminal to ask on and no --yes.`,
		Example: `  mcpcage unwrap
  mcpcage unwrap --client claude-code --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.hostPlaces(); err != nil {
				return err
			}
			opts.Now = time.Now
			return unwrapRun(opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation (for scripts)")
	f.StringSliceVar(&opts.Clients, "client", nil, "only these clients (`NAME`, repeatable): "+strings.Join(clients.IDs(), ", "))
	return cmd
}

func unwrapRun(opts *UnwrapOptions) error {
	reports, ledger, err := opts.readClients()
	if err != nil {
		return err
	}
	var errs fileErrors
	// Only what protect --fix wrapped here goes back: an entry it has no
	// record of, or whose command inside the cage is no longer the one it
	// wrapped, may have been written by anyone (a cloned repository's
	// .mcp.json), and "restoring" it would run their command uncaged.
	why := func(path string, s clients.Server) string {
		if s.RemoteCaged() {
			if ledger == nil {
				return "mcpcage's record of what protect --fix caged cannot be read"
			}
			wrote, orig := ledger.Remote(path, s.Where)
			switch {
			case orig == "":
				return "protect --fix did not cage it on this machine (it has no record of the remote entry it replaced)"
			case !slices.Equal(wrote, s.Args):
				return "it is no longer what protect --fix wrote"
			}
			return ""
		}
		cmd, args, w := s.Restorable()
		if w != "" {
			return w
		}
		if ledger == nil {
			return "mcpcage's record of what protect --fix caged cannot be read"
		}
		inner, ok := ledger.Wrapped(path, s.Where)
		if !ok {
			return "protect --fix did not cage it on this machine (it has no record of it)"
		}
		if inner != nil && !slices.Equal(inner, append([]string{cmd}, args...)) {
			return "the command inside the cage is not the one protect --fix wrapped"
		}
		return ""
	}
	plans := planEdit(reports, clients.OpUnwrap, func(r *fileReport) clients.Wrap {
		return clients.Wrap{Original: func(s clients.Server) string {
			if ledger == nil {
				return ""
			}
			_, orig := ledger.Remote(r.File.Path, s.Where)
			return orig
		}}
	},
		func(path string, s clients.Server) bool { return why(path, s) == "" }, &errs)
	for _, l := range errs.lines {
		untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: warning: left as it is: %s\n", l)
	}
	w := opts.IO.Out
	left := 0
	for _, r := range reports {
		for _, s := range r.Servers {
			if !s.Caged() {
				continue
			}
			if y := why(r.File.Path, s); y != "" {
				if left == 0 {
					fmt.Fprintln(w, "Left as they are:")
				}
				left++
				untrusted.Fprintf(w, "  %s  %s: %s\n", tilde(opts.Layout, r.File.Path), s.Name, y)
				untrusted.Fprintf(w, "      runs: %s\n", quoteArgs(append([]string{s.Command}, secrets.RedactArgs(s.Args)...)))
			}
		}
	}
	if left > 0 {
		fmt.Fprintln(w)
	}
	if len(plans) == 0 {
		fmt.Fprintln(w, "Nothing to unwrap: no caged server found.")
		return nil
	}
	printPlan(&opts.ProtectOptions, plans, "unwrap")
	n := 0
	for _, p := range plans {
		n += len(p.changes)
	}
	if err := confirm(&opts.ProtectOptions, opts.Yes, fmt.Sprintf("Restore %s in %s?", countOf(n, "server"), countOf(len(plans), "file")), "mcpcage unwrap --yes"); err != nil {
		return err
	}
	written, entries, failed := apply(&opts.ProtectOptions, plans, ledger, false)
	if written > 0 {
		untrusted.Fprintf(w, "Restored %s in %s. Restart the clients to start them uncaged.\n", countOf(entries, "server"), countOf(written, "file"))
	}
	if len(failed) > 0 {
		for _, f := range failed[:len(failed)-1] {
			untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: error: %s\n", f)
		}
		return withHint(errors.New(failed[len(failed)-1]), "run `mcpcage unwrap` again")
	}
	return nil
}
