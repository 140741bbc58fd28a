package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/images"
	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/install"
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
			return buildImages(cmd.Context(), io.ErrOut, o)
		},
	}
	build.Flags().BoolVar(&force, "force", false, "rebuild images that are up to date")
	cmd.AddCommand(build)
	return cmd
}

// buildImages builds the images o asks for, under the tags MCPCAGE_IMAGE_*
// name when set (so a test or a user's own tag never replaces the defaults).
func buildImages(ctx context.Context, errOut io.Writer, o images.Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		return &ExitError{Code: 1, Err: dockerHint(err)}
	}
	cli.Close()
	if os.Geteuid() != 0 {
		return &ExitError{Code: 1, Err: withHint(errors.New("building the cage images needs root (debootstrap and chroot)"),
			"run `sudo mcpcage images build`, or load images built elsewhere (docs/images.md)")}
	}
	o.NodeTag = strings.TrimSpace(os.Getenv(install.EnvNodeImage))
	o.PythonTag = strings.TrimSpace(os.Getenv(install.EnvPythonImage))
	if o.Cache == "" {
		if o.Cache, err = home.Sub("cache", "images"); err != nil {
			return err
		}
	}
	o.Stderr = errOut
	return images.Build(ctx, o)
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
	if ctx == nil {
		ctx = context.Background()
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		return &ExitError{Code: 1, Err: dockerHint(err)}
	}
	defer cli.Close()
	var rows []imageRow
	for _, kind := range []string{"npx", "uvx"} {
		cands, env := install.Candidates(kind)
		used := false
		for _, ref := range cands {
			r := imageRow{Kind: kind, Image: ref, Env: env}
			ins, err := cli.ImageInspect(ctx, ref)
			switch {
			case err == nil:
				r.Present, r.ID = true, ins.ID
				if !used {
					r.Used, used = true, true
				}
			case !errdefs.IsNotFound(err):
				return fmt.Errorf("cannot inspect image %s: %v", ref, err)
			}
			rows = append(rows, r)
		}
	}
	if asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
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
			fmt.Fprintf(io.Out, "no %s image: the first `mcpcage run` of such a server gets one (or run `mcpcage images build %s`)\n", kind, imageArg(kind))
		}
	}
	return nil
}

func imageArg(kind string) string {
	if kind == "uvx" {
		return "python"
	}
	return "node"
}

// firstUseImage gets the image a package kind needs when none is on this
// machine, saying what it does: pull the official image where a registry
// answers, else build the local one. A tag of mcpcage's own (mcpcage/...)
// exists nowhere to pull: it is built.
func firstUseImage(ctx context.Context, cli client.APIClient, errOut io.Writer, kind string) error {
	cands, env := install.Candidates(kind)
	what := "Node.js"
	if kind == "uvx" {
		what = "Python"
	}
	fmt.Fprintf(errOut, "mcpcage: no %s cage image on this machine (looked for %s)\n", what, strings.Join(cands, ", "))
	pull, build := cands[0], cands[len(cands)-1]
	if strings.HasPrefix(pull, "mcpcage/") {
		pull = ""
	}
	if env != "" && pull != "" {
		build = "" // someone else's image (run.go does not get here for one)
	}
	if pull != "" {
		fmt.Fprintf(errOut, "mcpcage: pulling %s (the official image)...\n", pull)
		t := time.Now()
		err := pullImage(ctx, cli, pull)
		if err == nil {
			fmt.Fprintf(errOut, "mcpcage: pulled %s in %s\n", pull, time.Since(t).Round(time.Second))
			return nil
		}
		if build == "" {
			return err
		}
		fmt.Fprintf(errOut, "mcpcage: cannot pull it (%v)\n", err)
	}
	fmt.Fprintf(errOut, "mcpcage: building %s locally from Debian's archive and the npm registry (no container registry needed; a few minutes the first time, progress below)\n", build)
	o := images.Options{Node: kind != "uvx", Python: kind == "uvx"}
	// The tag that is missing is the one built; MCPCAGE_IMAGE_* set it.
	t := time.Now()
	if err := buildImages(ctx, errOut, o); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "mcpcage: %s is ready (%s); starting the server\n", build, time.Since(t).Round(time.Second))
	return nil
}

func pullImage(ctx context.Context, cli client.APIClient, ref string) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	rc, err := cli.ImagePull(pctx, ref, image.PullOptions{})
	if err != nil {
		return errors.New(firstLine(err.Error()))
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(firstLine(m.Error))
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(s, "Error response from daemon: ")
}
