package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// ApproveOptions are the inputs of `mcpcage approve`.
type ApproveOptions struct {
	IO   *IOStreams
	Name string
	Yes  bool
	Hash string // approve only this pending set
	Now  func() time.Time
}

func newApproveCmd(io *IOStreams) *cobra.Command {
	opts := &ApproveOptions{IO: io, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Accept the pending changes of a server's tools",
		Long: `Pin the definitions that are pending for the server NAME (what
` + "`mcpcage diff NAME`" + ` shows) as approved. A locked session of the server
unlocks at its next tools/list; no restart is needed.

On a terminal it shows a summary and asks. Elsewhere it needs --yes. With
--hash it approves only the pending set that diff showed under that hash, and
refuses if the server has changed again since.

Exit status: 0 when approved, 1 when nothing was approved.`,
		Example: `  mcpcage diff demo-notes
  mcpcage approve demo-notes
  mcpcage approve demo-notes --yes --hash 7d85581763c962f9`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return approveRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve without asking")
	cmd.Flags().StringVar(&opts.Hash, "hash", "", "approve only if the pending set is still the one diff showed with this `HASH`")
	return cmd
}

func approveRun(opts *ApproveOptions) error {
	f, st, err := loadPins(opts.Name)
	if err != nil {
		return err
	}
	if f.Pending == nil {
		return withHint(fmt.Errorf("nothing to approve for %q: no changes are pending", opts.Name),
			"`mcpcage diff %s` shows pending changes once a session has seen them", opts.Name)
	}
	changes, err := pin.Changes(f)
	if err != nil {
		return fmt.Errorf("cannot compare the pins of %q: %v", opts.Name, err)
	}
	shown, err := pin.PendingHash(f)
	if err != nil {
		return err
	}
	stale := func(now string) error {
		return withHint(fmt.Errorf("the pending changes of %q are not the ones you reviewed (pending set %s, reviewed %s)", opts.Name, now, opts.Hash),
			"the server changed again: review it with `mcpcage diff %s`", opts.Name)
	}
	if opts.Hash != "" && !strings.EqualFold(opts.Hash, shown) {
		return stale(shown)
	}
	if opts.Hash == "" {
		opts.Hash = shown
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "Pending for %q (pending set %s):\n", untrusted.Line(opts.Name), shown)
	others := cagedTools()
	for _, c := range changes {
		mark := map[pin.Op]string{pin.Added: "+", pin.Removed: "-", pin.Changed: "~"}[c.Op]
		line := fmt.Sprintf("  %s %s %s", mark, itemLabel(c), c.Op)
		if len(c.Fields) > 0 && c.Fields[0] != "" {
			line += " (" + untrusted.Line(strings.Join(c.Fields, ", ")) + ")"
		}
		if c.New != nil {
			if n := scanHigh(c, f, others); n > 0 {
				line += fmt.Sprintf(" - %d high-severity", n)
			}
		}
		fmt.Fprintln(w, line)
	}
	if f.Approved != nil {
		for _, l := range launchChanges(f.Approved.Launch, f.Pending.Launch) {
			fmt.Fprintln(w, "  ! launch changed: "+l)
		}
	}
	if !opts.Yes {
		if !opts.IO.InTTY {
			return &ExitError{Code: 1, Err: withHint(errors.New("not approved: approving needs a confirmation"),
				"review `mcpcage diff %s`, then run `mcpcage approve %s --yes --hash %s`", opts.Name, opts.Name, shown)}
		}
		fmt.Fprintf(w, "Approve these %d changes? [y/N] ", len(changes))
		answer, _ := bufio.NewReader(opts.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(w, "Nothing approved.")
			return &ExitError{Code: 1}
		}
	}
	var n int
	_, err = st.Update(opts.Name, func(f *pin.File) (bool, error) {
		now, err := pin.PendingHash(f)
		if err != nil {
			return false, fmt.Errorf("nothing to approve for %q any more: %v", opts.Name, err)
		}
		if !strings.EqualFold(now, opts.Hash) {
			return false, stale(now)
		}
		ch, _ := pin.Changes(f)
		n = len(ch)
		pin.Approve(f, opts.Now())
		return true, nil
	})
	if err != nil {
		return err
	}
	auditEvent(opts.IO, "approve", map[string]any{"server": opts.Name, "changes": n, "pending_set": opts.Hash})
	fmt.Fprintf(w, "Approved %d changes for %q. Running sessions unlock at their next tools/list.\n", n, untrusted.Line(opts.Name))
	return nil
}

func scanHigh(c pin.Change, f *pin.File, others otherTools) int {
	n := 0
	for _, fd := range scanItem(c, f, others) {
		if fd.Severity == scan.High {
			n++
		}
	}
	return n
}
