// Package images builds the cage images from the recipe in build.sh, which
// is embedded in the binary: `mcpcage images build` needs no checkout, and
// `make images` runs the same script from the source tree.
package images

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed build.sh
var script []byte

// Options say which images to build, under which tags, with which cache.
type Options struct {
	Node, Python bool // which images
	// NodeTag and PythonTag are the tags built; "" means the script's
	// defaults (mcpcage/node:22, mcpcage/python:3).
	NodeTag, PythonTag string
	// Cache keeps the debootstrap base and the npm tarballs between builds.
	Cache string
	// Force rebuilds images that are up to date.
	Force  bool
	Stderr io.Writer // the script's lines: progress as Progress says, errors always
	// Progress is how much the script says (MCPCAGE_PROGRESS in build.sh):
	// "plain" a line per phase with its time and a tick every 15 s,
	// "brief" the first and last lines only, "quiet" errors only.
	Progress string
}

// Build runs the embedded recipe. Its progress (a line per phase, with the
// time it took, or less: o.Progress) goes to o.Stderr as it happens.
func Build(ctx context.Context, o Options) error {
	if !o.Node && !o.Python {
		return fmt.Errorf("images.Build: no image asked for")
	}
	if err := os.MkdirAll(o.Cache, 0o700); err != nil {
		return fmt.Errorf("cannot create the image cache: %w", err)
	}
	dir, err := os.MkdirTemp("", "mcpcage-recipe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// build.sh works from the folder above its own (a checkout's root).
	if err := os.Mkdir(filepath.Join(dir, "images"), 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, "images", "build.sh")
	if err := os.WriteFile(path, script, 0o700); err != nil {
		return err
	}
	var args []string
	if o.Node {
		args = append(args, "node")
	}
	if o.Python {
		args = append(args, "python")
	}
	cmd := exec.CommandContext(ctx, "bash", append([]string{path}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCPCAGE_IMAGES_CACHE="+o.Cache)
	if o.NodeTag != "" {
		cmd.Env = append(cmd.Env, "MCPCAGE_NODE_TAG="+o.NodeTag)
	}
	if o.PythonTag != "" {
		cmd.Env = append(cmd.Env, "MCPCAGE_PYTHON_TAG="+o.PythonTag)
	}
	if o.Force {
		cmd.Env = append(cmd.Env, "MCPCAGE_IMAGES_FORCE=1")
	}
	if o.Progress != "" {
		cmd.Env = append(cmd.Env, "MCPCAGE_PROGRESS="+o.Progress)
	}
	cmd.Stdout, cmd.Stderr = o.Stderr, o.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the cage images failed (%v): see the lines above", err)
	}
	return nil
}
