package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/images"
	"github.com/mcpcage/mcpcage/internal/cage"
)

func newImagesCmd(io *IOStreams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "images [--json] | images build [node] [python] [--force]",
		Short: "List the cage images (present, missing, which is used), or build them",
		Long: `mcpcage images lists, for npx (Node.js) and uvx (Python) servers, the images
mcpcage looks for in order, whether each is on this machine, and which one
will be used. MCPCAGE_IMAGE_NODE / MCPCAGE_IMAGE_PYTHON name the only one.

mcpcage images build builds the local images (mcpcage/node:22,
mcpcage/python:3, or the tags those variables name) from Debian's archive and
the npm registry, with no container registry, using the recipe built into
this binary. It needs root, debootstrap and a running Docker engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return imagesList(cmd.Context(), io, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var force bool
	build := &cobra.Command{
		Use:   "build [node] [python]",
		Short: "Build the cage images locally (default: both)",
		Args: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a != "node" && a != "python" {
					return &ExitError{Code: exitUsage, Err: fmt.Errorf("unknown image %q: give node, python or both", a)}
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o := images.Options{Force: force}
			for _, a := range args {
				o.Node = o.Node || a == "node"
				o.Python = o.Python || a == "python"
			}
			if len(args) == 0 {
				o.Node, o.Python = true, true
			}
			o.Progress = string(io.Reporter().Mode())
			return buildImages(cmd.Context(), io.ErrOut, o)
		},
	}
	build.Flags().BoolVar(&force, "force", false, "rebuild images that are up to date")
	cmd.AddCommand(build)
	return cmd
}

// buildImages builds the images o asks for (cage.BuildImages).
func buildImages(ctx context.Context, errOut io.Writer, o images.Options) error {
	err := cage.BuildImages(ctx, errOut, o)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	return nil
}

type imageRow struct {
	Kind    string `json:"kind"`
	Image   string `json:"image"`
	Present bool   `json:"present"`
	Used    bool   `json:"used"`
	ID      string `json:"id,omitempty"`
	Env     string `json:"from_env,omitempty"`
}

func imagesList(ctx context.Context, io *IOStreams, asJSON bool) error {
	cli, err := connectEngine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	states, err := cage.ListImages(ctx, cli)
	if err != nil {
		return err
	}
	rows := make([]imageRow, 0, len(states))
	for _, st := range states {
		rows = append(rows, imageRow(st))
	}
	if asJSON {
		return writeJSON(io.Out, rows)
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVERS\tIMAGE\tSTATE\t")
	missing := map[string]bool{}
	for _, r := range rows {
		state := "missing"
		if r.Present {
			state = "present"
		}
		if r.Used {
			state += ", used"
		}
		if r.Env != "" {
			state += " (from " + r.Env + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", r.Kind, r.Image, state)
		if !r.Present {
			missing[r.Kind] = true
		}
	}
	tw.Flush()
	for _, kind := range []string{"npx", "uvx"} {
		anyUsed := false
		for _, r := range rows {
			anyUsed = anyUsed || (r.Kind == kind && r.Used)
		}
		if !anyUsed {
			fmt.Fprintf(io.Out, "no %s image: the first `mcpcage run` of such a server gets one (or run `mcpcage images build %s`)\n", kind, cage.BuildArg(kind))
		}
	}
	return nil
}
