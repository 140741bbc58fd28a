package cage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mount is a host folder (or file) the server may see, at the same path.
type Mount struct {
	Source   string // host path, symlinks resolved
	Target   string // path in the container: the path as the user wrote it, cleaned
	Writable bool
}

// ParseMountSpec reads a --mount value: PATH, PATH:ro or PATH:rw. A leading
// "~/" is the user's home (client configs do not expand it). PATH must be
// absolute after that, or relative to the working directory.
func ParseMountSpec(spec string) (target string, writable bool, err error) {
	p := spec
	switch {
	case strings.HasSuffix(p, ":rw"):
		p, writable = strings.TrimSuffix(p, ":rw"), true
	case strings.HasSuffix(p, ":ro"):
		p = strings.TrimSuffix(p, ":ro")
	}
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false, fmt.Errorf("--mount %q: give a folder, optionally followed by :rw", spec)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		h, herr := os.UserHomeDir()
		if herr != nil {
			return "", false, fmt.Errorf("--mount %q: cannot find your home directory", spec)
		}
		p = filepath.Join(h, p[1:])
	}
	if !filepath.IsAbs(p) {
		abs, aerr := filepath.Abs(p)
		if aerr != nil {
			return "", false, fmt.Errorf("--mount %q: %v", spec, aerr)
		}
		p = abs
	}
	return filepath.Clean(p), writable, nil
}

// ResolveMount checks a mount target on the host and returns the Mount.
// It refuses paths that do not exist, paths that hold the Docker socket, and
// paths inside mcpcageHome (other servers' HOMEs, pins and the audit log).
func ResolveMount(target string, writable bool, mcpcageHome string) (Mount, error) {
	src, err := filepath.EvalSymlinks(target)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Mount{}, fmt.Errorf("cannot mount %s: it does not exist", target)
		}
		return Mount{}, fmt.Errorf("cannot mount %s: %v", target, err)
	}
	// A system engine's socket (engines) may not be under a mount at all.
	for _, s := range systemEnginePaths() {
		if within(s, src) || within(s, target) {
			return Mount{}, fmt.Errorf("refusing to mount %s: it would show the Docker socket (%s) to the server, which is control of the host", target, s)
		}
	}
	// A folder that holds a user's engine's socket (Docker Desktop, Colima,
	// rootless) is refused when it is the socket's own folder or inside it;
	// a folder above it is mounted with the socket's folder masked.
	for _, d := range DockerSocketDirs() {
		if within(src, d) {
			return Mount{}, fmt.Errorf("refusing to mount %s: it would show the Docker socket in %s to the server, which is control of the host", target, d)
		}
	}
	if mcpcageHome != "" {
		mh := mcpcageHome
		if r, err := filepath.EvalSymlinks(mh); err == nil {
			mh = r
		}
		if within(src, mh) {
			return Mount{}, fmt.Errorf("refusing to mount %s: it is inside mcpcage's own state (%s)", target, mcpcageHome)
		}
	}
	return Mount{Source: src, Target: target, Writable: writable}, nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	if p == dir {
		return true
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Covered reports whether target is already visible through one of ms.
func Covered(ms []Mount, target string) bool {
	for _, m := range ms {
		if within(target, m.Target) {
			return true
		}
	}
	return false
}

// MasksFor returns the container paths under which the host folders hidden
// (mcpcage's state directory, the folders of Docker sockets) would show
// through ms, so that they can be covered (Spec.Masks): mounting a folder that
// holds $MCPCAGE_HOME or ~/.docker/run, such as the home directory, must not
// hand the server the pins, the audit log, other servers' HOMEs or the engine.
func MasksFor(ms []Mount, hidden ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range hidden {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		for _, m := range ms {
			if !within(h, m.Source) {
				continue
			}
			rel, err := filepath.Rel(m.Source, h)
			if err != nil {
				continue
			}
			if p := filepath.Join(m.Target, rel); !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
