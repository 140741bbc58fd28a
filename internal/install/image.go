package install

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// The images, in the order they are looked for (see the package doc).
const (
	// OfficialNode and OfficialPython are the images a user would pull
	// themselves. They are used when present locally, and then referenced by
	// the repository digest the engine recorded when they were pulled.
	OfficialNode   = "node:22-bookworm-slim"
	OfficialPython = "ghcr.io/astral-sh/uv:python3.12-bookworm-slim"

	// LocalNode and LocalPython are what `make images` (images/build.sh)
	// builds without any registry.
	LocalNode   = "mcpcage/node:22"
	LocalPython = "mcpcage/python:3"

	EnvNodeImage   = "MCPCAGE_IMAGE_NODE"
	EnvPythonImage = "MCPCAGE_IMAGE_PYTHON"
)

// ImageError is a missing image; its message says how to get one.
type ImageError struct {
	Tried []string // references looked for, in order
	Env   string   // the variable that named the only candidate, if one did
}

func (e *ImageError) Error() string {
	if e.Env != "" {
		return fmt.Sprintf("image %s (from %s) not found: docker pull %s, or unset %s", e.Tried[0], e.Env, e.Tried[0], e.Env)
	}
	return fmt.Sprintf("image %s not found: run `sudo mcpcage images build` (or docker pull %s)", e.Tried[len(e.Tried)-1], e.Tried[0])
}

// ImageFor returns the image reference and ID for a kind of package.
func ImageFor(ctx context.Context, cli client.APIClient, kind string) (ref, id string, err error) {
	switch kind {
	case "npx":
		return resolveImage(ctx, cli, EnvNodeImage, OfficialNode, LocalNode)
	case "uvx":
		return resolveImage(ctx, cli, EnvPythonImage, OfficialPython, LocalPython)
	}
	return "", "", fmt.Errorf("unknown package kind %q: want npx or uvx", kind)
}

// Candidates returns the images looked for, in order, for a kind of package
// (npx, uvx), and the variable that named the only one ("" for the default
// order).
func Candidates(kind string) ([]string, string) {
	if kind == "uvx" {
		return candidates(EnvPythonImage, OfficialPython, LocalPython)
	}
	return candidates(EnvNodeImage, OfficialNode, LocalNode)
}

func candidates(env, official, local string) ([]string, string) {
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return []string{v}, env
	}
	return []string{official, local}, ""
}

// resolveImage: the override when set (and then only it), else the official
// image when pulled, else the locally built one.
func resolveImage(ctx context.Context, cli client.APIClient, env, official, local string) (string, string, error) {
	candidates, named := candidates(env, official, local)
	for _, ref := range candidates {
		ins, err := cli.ImageInspect(ctx, ref)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("cannot reach Docker: %v", err)
		}
		// A pulled image is named by its digest, so that what runs is what was
		// pulled even if the tag moves later; a locally built one has no
		// registry digest and is pinned by its ID instead.
		for _, d := range ins.RepoDigests {
			if sameRepo(d, ref) {
				ref = d
				break
			}
		}
		return ref, ins.ID, nil
	}
	return "", "", &ImageError{Tried: candidates, Env: named}
}

func sameRepo(digestRef, ref string) bool {
	repo, _, _ := strings.Cut(digestRef, "@")
	r := ref
	if i := strings.LastIndexByte(r, ':'); i > strings.LastIndexByte(r, '/') {
		r = r[:i]
	}
	return repo == r || repo == "docker.io/"+r || repo == "docker.io/library/"+r || repo == "library/"+r
}
