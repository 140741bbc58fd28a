package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// PsOptions are `mcpcage ps`'s flags.
type PsOptions struct {
	IO   *IOStreams
	JSON bool
	Now  func() time.Time
}

func newPsCmd(io *IOStreams) *cobra.Command {
	opts := &PsOptions{IO: io, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the cages that are running",
		Long: `List mcpcage's containers: the server's name, the container, its image, how
long it has run and the mcpcage process that owns it. An owner shown as "gone"
is an orphan, removed by the next ` + "`mcpcage run`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return psRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	return cmd
}

type psEntry struct {
	cage.Info
	UptimeSeconds int64 `json:"uptime_seconds"`
}

func psRun(ctx context.Context, opts *PsOptions) error {
	cli, err := connectEngine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	infos, err := cage.List(ctx, cli)
	if err != nil {
		return err
	}
	now := opts.Now()
	entries := make([]psEntry, 0, len(infos))
	for _, in := range infos {
		up := int64(now.Sub(in.Created) / time.Second)
		if up < 0 {
			up = 0
		}
		entries = append(entries, psEntry{Info: in, UptimeSeconds: up})
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no cages")
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCONTAINER\tIMAGE\tSTATE\tUPTIME\tOWNER")
	for _, e := range entries {
		owner := fmt.Sprintf("%d", e.OwnerPID)
		if e.Owner != cage.OwnerAlive.String() {
			owner += " (" + e.Owner + ")"
		}
		untrusted.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Container, shortImage(e.Image), e.State,
			formatUptime(time.Duration(e.UptimeSeconds)*time.Second), owner)
	}
	return tw.Flush()
}

func shortImage(img string) string {
	if strings.HasPrefix(img, "sha256:") && len(img) > 19 {
		return img[:19]
	}
	return img
}

func formatUptime(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
