// Package install is the install phase of a cage: it puts an npm or PyPI
// package into mcpcage's package cache so that the run phase can mount it
// read-only into a container with no network.
package install

import (
	"context"
	"errors"
	"io"

	"github.com/docker/docker/client"
)

// Request says what to install.
type Request struct {
	Kind         string    // "npx" or "uvx"
	Spec         string    // the package as typed: "pkg", "pkg@1.2.3", "@scope/pkg@latest", "pkg==1.0" (uvx)
	Update       bool      // resolve and install anew even if cached
	AllowScripts bool      // explicit opt-in to run install scripts
	Stderr       io.Writer // progress and warnings
}

// Result is what the run phase needs to start the installed server.
type Result struct {
	Package, Version string   // resolved name and exact version
	Image, ImageID   string   // image the server must run on, and its ID (sha256:...)
	CacheDir         string   // host directory to mount read-only in the run container
	MountPoint       string   // where to mount it in the container
	Command          []string // argv inside the container that starts the server, before the user's args
	Env              []string // non-secret env the server needs
}

// Ensure returns an installed package, installing it first when needed.
func Ensure(ctx context.Context, cli *client.Client, req Request) (*Result, error) {
	return nil, errors.New("install: not implemented yet")
}

// NodeImage returns the image npx servers run on.
func NodeImage() (string, error) { return "", errors.New("install: not implemented yet") }

// PythonImage returns the image uvx servers run on.
func PythonImage() (string, error) { return "", errors.New("install: not implemented yet") }
