package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// PinsOptions are the inputs of `mcpcage pins`.
type PinsOptions struct {
	IO   *IOStreams
	Name string
	JSON bool
	Yes  bool
}

func newPinsCmd(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "List, show or forget the pinned tools of servers",
		Long: `Pins are the definitions (tools, prompts, resources, resource templates,
instructions) each server showed and a person accepted, kept in
$MCPCAGE_HOME/pins, one file per server.`,
		Args: cobra.NoArgs,
	}
	listOpts := &PinsOptions{IO: io}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the servers with pins",
		Example: "  mcpcage pins list\n  mcpcage pins list --json",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return pinsListRun(listOpts) },
	}
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print the pin files as a JSON array")
	showOpts := &PinsOptions{IO: io}
	show := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show what is pinned for a server",
		Example: "  mcpcage pins show demo-notes\n  mcpcage pins show demo-notes --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			showOpts.Name = args[0]
			return pinsShowRun(showOpts)
		},
	}
	show.Flags().BoolVar(&showOpts.JSON, "json", false, "print the pin file")
	forgetOpts := &PinsOptions{IO: io}
	forget := &cobra.Command{
		Use:   "forget NAME",
		Short: "Delete the pins of a server (its next session trusts what it sees first)",
		Long: `Delete the pins of the server NAME, approved and pending. The next session
records what the server shows as if it were the first use (or, with --strict,
asks for approval). Asks on a terminal; elsewhere it needs --yes.`,
		Example: "  mcpcage pins forget demo-notes --yes",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			forgetOpts.Name = args[0]
			return pinsForgetRun(forgetOpts)
		},
	}
	forget.Flags().BoolVarP(&forgetOpts.Yes, "yes", "y", false, "forget without asking")
	cmd.AddCommand(list, show, forget)
	return cmd
}

func snapshotCounts(s *pin.Snapshot) string {
	if s == nil {
		return "-"
	}
	var parts []string
	for _, k := range pin.Kinds[1:] {
		if s.Has(k) {
			parts = append(parts, fmt.Sprintf("%d %ss", len(s.List(k)), k.Noun()))
		}
	}
	if s.Instructions != nil && *s.Instructions != "" {
		parts = append(parts, "instructions")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func pinsListRun(opts *PinsOptions) error {
	dir, err := home.Dir()
	if err != nil {
		return err
	}
	files, errs := guard.PinStore(dir).List()
	for _, e := range errs {
		fmt.Fprintf(opts.IO.ErrOut, "mcpcage: warning: %v\n", e)
	}
	if opts.JSON {
		if files == nil {
			files = []*pin.File{}
		}
		b, err := json.Marshal(files, jsontext.WithIndent("  "), json.Deterministic(true))
		if err != nil {
			return err
		}
		return printJSON(opts.IO.Out, b)
	}
	if len(files) == 0 {
		fmt.Fprintln(opts.IO.Out, "No pins yet: they are recorded the first time a session lists a server's tools.")
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tAPPROVED\tPINNED")
	for _, f := range files {
		status := "ok"
		if f.Pending != nil {
			status = "changes pending"
		}
		when := "never"
		if f.Approved != nil {
			when = f.Approved.Time.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", untrusted.Line(f.Server), status, when, snapshotCounts(f.Approved))
	}
	return tw.Flush()
}

func pinsShowRun(opts *PinsOptions) error {
	f, _, err := loadPins(opts.Name)
	if err != nil {
		return err
	}
	w := opts.IO.Out
	if opts.JSON {
		b, err := f.Marshal()
		if err != nil {
			return err
		}
		return printJSON(w, bytes.TrimSuffix(b, []byte("\n")))
	}
	fmt.Fprintf(w, "Server:   %s\n", untrusted.Line(f.Server))
	if f.Approved == nil {
		fmt.Fprintln(w, "Approved: nothing yet")
	} else {
		a := f.Approved
		fmt.Fprintf(w, "Approved: %s\n", a.Time.Local().Format(time.DateTime))
		fmt.Fprintf(w, "Launch:   %s\n", describeLaunch(a))
		if a.Instructions != nil && *a.Instructions != "" {
			fmt.Fprintf(w, "Instructions:\n")
			for _, l := range strings.Split(untrusted.Text(*a.Instructions), "\n") {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		for _, k := range pin.Kinds[1:] {
			if !a.Has(k) {
				continue
			}
			items := a.List(k)
			fmt.Fprintf(w, "%s (%d):\n", strings.ToUpper(k.Noun()[:1])+k.Noun()[1:]+"s", len(items))
			for _, it := range items {
				key, _ := pin.ItemKey(k, it)
				var d struct {
					Description string `json:"description"`
				}
				_ = json.Unmarshal(it, &d)
				desc := []rune(untrusted.Line(strings.SplitN(d.Description, "\n", 2)[0]))
				if len(desc) > 72 {
					desc = append(desc[:69], []rune("...")...)
				}
				fmt.Fprintf(w, "    %-28s %s\n", untrusted.Line(key), string(desc))
			}
		}
	}
	if f.Pending != nil {
		fmt.Fprintf(w, "Pending:  changes seen %s; review them with `mcpcage diff %s`\n", f.Pending.Time.Local().Format(time.DateTime), untrusted.Line(f.Server))
	}
	return nil
}

func describeLaunch(s *pin.Snapshot) string {
	l := s.Launch
	parts := []string{l.Kind}
	if l.Package != "" {
		v := l.Package
		if l.Version != "" {
			v += "@" + l.Version
		}
		parts = append(parts, v)
	}
	if l.Image != "" {
		parts = append(parts, l.Image)
	}
	if l.ImageDigest != "" {
		parts = append(parts, l.ImageDigest)
	}
	if len(l.Argv) > 0 {
		parts = append(parts, strings.Join(l.Argv, " "))
	}
	return untrusted.Line(strings.Join(parts, " "))
}

func pinsForgetRun(opts *PinsOptions) error {
	dir, err := home.Dir()
	if err != nil {
		return err
	}
	if !opts.Yes {
		if !opts.IO.InTTY {
			return withHint(errors.New("not forgotten: forgetting pins needs a confirmation"), "run `mcpcage pins forget %s --yes`", opts.Name)
		}
		fmt.Fprintf(opts.IO.Out, "Forget the pins of %q? Its next session will trust what it sees first. [y/N] ", untrusted.Line(opts.Name))
		answer, _ := bufio.NewReader(opts.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(opts.IO.Out, "Nothing forgotten.")
			return &ExitError{Code: 1}
		}
	}
	ok, err := guard.PinStore(dir).Forget(opts.Name)
	if err != nil {
		return err
	}
	if !ok {
		return withHint(fmt.Errorf("no pins for %q", opts.Name), "`mcpcage pins list` shows the known servers")
	}
	fmt.Fprintf(opts.IO.Out, "Forgot the pins of %q.\n", untrusted.Line(opts.Name))
	return nil
}
