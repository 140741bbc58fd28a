// Package install is the install phase of a cage: it puts an npm or PyPI
// package into mcpcage's package cache, so that the run phase can mount it
// read-only into a container that has no network.
//
// # The install container
//
// A package is installed by a short-lived container of the package's image
// (see Images) that reaches the registry through Docker's default bridge but
// sees nothing of the user: no home directory, no host path except the empty
// cache directory it fills (mounted at MountPoint, the same path the run
// container will use, because a virtualenv records absolute paths) and, when
// the user has one configured, a CA bundle mounted read-only. It runs as uid
// 1000 (or as the invoking user when mcpcage is not root) with no
// capabilities, no-new-privileges and a read-only root with a tmpfs /tmp.
//
//   - npx: npm install --ignore-scripts --omit=dev of the package. Packages
//     whose preinstall/install/postinstall scripts (or implicit node-gyp build)
//     were skipped are named in a warning. Request.AllowScripts runs them,
//     still inside the install container.
//   - uvx: a virtual environment at MountPoint/venv, filled with wheels only
//     (uv --no-build when the image has uv, else pip --only-binary=:all:).
//     Nothing is built, so no code of the package runs at install. A package
//     (or dependency) with no wheel for the platform but an sdist is refused
//     with SourceOnlyError.
//
// The user's registry settings reach the install container through its
// environment, never its argv: the npm registry URL (NPM_CONFIG_REGISTRY,
// npm_config_registry, else the registry= line of ~/.npmrc; auth lines of
// .npmrc are never read), PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS,
// PIP_TRUSTED_HOST and their UV_ equivalents, and the CA files named by
// NODE_EXTRA_CA_CERTS, SSL_CERT_FILE and PIP_CERT (mounted read-only under
// /etc/mcpcage/ca/).
//
// # The cache
//
// Under $MCPCAGE_HOME/packages:
//
//	<kind>/<key>/pkg/        the installed package; mounted read-only at MountPoint
//	<kind>/<key>/meta.json   what was installed and how to start it (Meta)
//	resolved/<kind>-<h>.json the version last installed for a name (Resolved)
//	locks/<kind>-<h>.lock    flock held while a name is resolved or installed
//	tmp/                     installs in progress; renamed into place when complete
//
// where kind is "npx" or "uvx", h is the first 16 hex digits of
// SHA-256(name) and key is the first 32 hex digits of
//
//	SHA-256("mcpcage package v1\n" + kind + "\n" + name + "\n" + version + "\n" + imageID + "\n")
//
// with name the npm name as typed or the PEP 503 normalised PyPI name
// followed by its extras in lower case as typed ("pkg[cli]"), version
// the exact resolved version, and imageID the image's ID: a virtualenv or a
// native addon is only valid for the runtime it was installed with.
//
// A spec without an exact version ("pkg", "pkg@latest", "pkg@^1") runs the
// version recorded in resolved/ when there is one, without touching the
// network; Request.Update resolves anew. An exact version runs that version,
// installing it if it is not cached. An entry exists only complete: it is
// built in tmp/ and renamed into place under the name's lock.
//
// # Images
//
// For each kind the image is, in order: the one named by MCPCAGE_IMAGE_NODE /
// MCPCAGE_IMAGE_PYTHON when set (and then only it); else the official image
// (OfficialNode, OfficialPython) if it has been pulled, referenced by its
// repository digest; else the image `make images` builds (LocalNode,
// LocalPython). None present is an ImageError that says what to run.
package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/gofrs/flock"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/progress"
)

// MountPoint is where the package cache entry is mounted, at install and at
// run time alike.
const MountPoint = "/srv/pkg"

// Request says what to install.
type Request struct {
	Kind         string // "npx" or "uvx"
	Spec         string // the package as typed: "pkg", "pkg@1.2.3", "@scope/pkg@latest", "pkg==1.0" (uvx)
	Bin          string // the package's command to run (`npx -p PKG CMD`, `uvx --from PKG CMD`); "" for its own
	Update       bool   // resolve and install anew even if cached
	AllowScripts bool   // explicit opt-in to run install scripts (npm; still inside the install container)
	// AllowDeps names the packages of the tree that may come from
	// elsewhere than the registry in use, or under another name (npm).
	AllowDeps []string
	Stderr    io.Writer // warnings (Skipped install scripts named here) and a failed installer's output; nil discards
	// Progress says what is installed, that it is still running, and how
	// long it took; nil says nothing.
	Progress *progress.Reporter

	// Labels are added to the install container's labels, so that the caller's
	// owner labels let an interrupted install's container be reaped.
	Labels map[string]string
}

// Result is what the run phase needs to start the installed server.
type Result struct {
	Package, Version string   // resolved name and exact version
	Image, ImageID   string   // image the server must run on, and its ID (sha256:...)
	CacheDir         string   // host directory to mount READ-ONLY in the run container
	MountPoint       string   // where to mount it in the container
	Command          []string // argv inside the container that starts the server, before the user's args
	Env              []string // non-secret env the server needs (PATH, ...)

	Installed bool     // this call ran an install container (false: served from the cache)
	Skipped   []string // packages whose install scripts were skipped, "name@version (script, ...)"
}

// Meta is meta.json of a cache entry.
type Meta struct {
	Kind      string    `json:"kind"`
	Package   string    `json:"package"`
	Extras    string    `json:"extras,omitempty"`
	Version   string    `json:"version"`
	Image     string    `json:"image"`
	ImageID   string    `json:"image_id"`
	Command   []string  `json:"command"`
	Env       []string  `json:"env"`
	Skipped   []string  `json:"skipped,omitempty"`
	Scripts   bool      `json:"scripts_ran"`
	Installed time.Time `json:"installed"`
	// Tree is the installed tree with each package's source and integrity
	// hash (npx), as npm recorded it when it was installed.
	Tree []TreeEntry `json:"tree,omitempty"`
}

// Resolved is resolved/<kind>-<h>.json.
type Resolved struct {
	Kind      string `json:"kind"`
	Package   string `json:"package"` // name, and extras ("[a,b]") when given
	Version   string `json:"version"`
	Requested string `json:"requested,omitempty"` // the exact version as typed, when one was
}

// ForeignError is an npm package whose installed tree holds packages that
// did not come from the registry in use, or came under another name (a
// dependency on a tarball URL, a git repository, a file, an npm alias).
// Nothing of the install is kept.
type ForeignError struct {
	Package  string
	Registry string
	Detail   string // the packages, each with where it came from
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("refused %s: its dependencies do not all come from the registry %s: %s", e.Package, e.Registry, e.Detail)
}

// Hint says how to allow them.
func (e *ForeignError) Hint() string {
	return "if you trust them, allow each by name with --allow-dependency NAME"
}

// SourceOnlyError is a Python package that has no wheel for the platform:
// installing it would mean building it, which runs its code.
type SourceOnlyError struct {
	Package  string // the package without a wheel
	Required string // the requested package, when Package is a dependency of it
}

func (e *SourceOnlyError) Error() string {
	who := fmt.Sprintf("%q", e.Package)
	if e.Required != "" && e.Required != e.Package {
		who = fmt.Sprintf("%q (needed by %q)", e.Package, e.Required)
	}
	return who + " installs only from source (no wheel for this platform): installing it would run its code, so mcpcage refuses it"
}

// NotFoundError is a package or version the registry does not have.
type NotFoundError struct {
	Kind, Package, Registry, Detail string
}

func (e *NotFoundError) Error() string {
	what := "npm package"
	if e.Kind == "uvx" {
		what = "Python package"
	}
	where := ""
	if e.Registry != "" {
		where = " in " + e.Registry
	}
	return fmt.Sprintf("%s %q not found%s (%s): check the name and version", what, e.Package, where, e.Detail)
}

// Ensure returns an installed package, installing it first when it is not in
// the cache (or when req.Update asks). cli must negotiate the API version.
func Ensure(ctx context.Context, cli *client.Client, req Request) (*Result, error) {
	return ensure(ctx, cli, req)
}

func ensure(ctx context.Context, cli client.APIClient, req Request) (*Result, error) {
	stderr := req.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	sp, err := launch.ParseSpec(req.Kind, req.Spec)
	if err != nil {
		return nil, err
	}
	image, imageID, err := ImageFor(ctx, cli, sp.Kind)
	if err != nil {
		return nil, err
	}
	root, err := home.Sub("packages")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"locks", "resolved", "tmp", sp.Kind} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("cannot create the package cache: %v", err)
		}
	}
	sweepTmp(filepath.Join(root, "tmp"))
	// Extras change what is installed, so they are part of the identity.
	id := sp.Name + strings.ToLower(sp.Extras)
	unlock, err := lockName(ctx, filepath.Join(root, "locks", sp.Kind+"-"+nameHash(id)+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	resolvedPath := filepath.Join(root, "resolved", sp.Kind+"-"+nameHash(id)+".json")
	rec, _ := readResolved(resolvedPath)
	if rec != nil && (rec.Package != id || rec.Kind != sp.Kind) {
		rec = nil
	}
	version := ""
	switch {
	case sp.Exact:
		version = sp.Version
		// A version written another way than the package spells it
		// ("1.0.0" for 1.0) finds the entry through the record.
		if rec != nil && rec.Requested == sp.Version {
			version = rec.Version
		}
	case !req.Update && rec != nil:
		version = rec.Version
	}
	if version != "" && !req.Update {
		if m, dir, err := readEntry(root, sp.Kind, id, version, imageID); err == nil {
			return withBin(result(m, dir, false), req.Bin)
		}
	}

	m, dir, err := installEntry(ctx, cli, root, sp, version, image, imageID, req, stderr)
	if err != nil {
		return nil, err
	}
	requested := ""
	if sp.Exact {
		requested = sp.Version
	}
	if err := writeJSONAtomic(resolvedPath, Resolved{Kind: sp.Kind, Package: id, Version: m.Version, Requested: requested}); err != nil {
		return nil, fmt.Errorf("cannot record the installed version: %v", err)
	}
	return withBin(result(m, dir, true), req.Bin)
}

func result(m *Meta, dir string, installed bool) *Result {
	return &Result{
		Package:    m.Package,
		Version:    m.Version,
		Image:      m.Image,
		ImageID:    m.ImageID,
		CacheDir:   filepath.Join(dir, "pkg"),
		MountPoint: MountPoint,
		Command:    append([]string(nil), m.Command...),
		Env:        append([]string(nil), m.Env...),
		Installed:  installed,
		Skipped:    append([]string(nil), m.Skipped...),
	}
}

// EntryKey is the cache key of an installed package (see the package doc).
func EntryKey(kind, name, version, imageID string) string {
	sum := sha256.Sum256([]byte("mcpcage package v1\n" + kind + "\n" + name + "\n" + version + "\n" + imageID + "\n"))
	return hex.EncodeToString(sum[:16])
}

func nameHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:8])
}

func readEntry(root, kind, name, version, imageID string) (*Meta, string, error) {
	dir := filepath.Join(root, kind, EntryKey(kind, name, version, imageID))
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, "", err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "", err
	}
	if m.Kind != kind || m.Package+m.Extras != name || m.Version != version || m.ImageID != imageID || len(m.Command) == 0 {
		return nil, "", errors.New("cache entry does not match its key")
	}
	return &m, dir, nil
}

func readResolved(path string) (*Resolved, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Resolved
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Version == "" {
		return nil, errors.New("no version")
	}
	return &r, nil
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// lockName holds an exclusive flock on path until the returned func runs. It
// gives up when ctx ends.
func lockName(ctx context.Context, path string) (func(), error) {
	l := flock.New(path)
	ok, err := l.TryLockContext(ctx, 100*time.Millisecond)
	if err != nil || !ok {
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("cannot lock the package cache (%s): %v", path, err)
	}
	return func() { _ = l.Unlock() }, nil
}

func installEntry(ctx context.Context, cli client.APIClient, root string, sp launch.Spec, version, image, imageID string, req Request, stderr io.Writer) (*Meta, string, error) {
	tmp, err := os.MkdirTemp(filepath.Join(root, "tmp"), sp.Kind+"-")
	if err != nil {
		return nil, "", fmt.Errorf("cannot create the package cache: %v", err)
	}
	defer os.RemoveAll(tmp)
	pkgDir := filepath.Join(tmp, "pkg")
	if err := os.Mkdir(pkgDir, 0o755); err != nil {
		return nil, "", fmt.Errorf("cannot create the package cache: %v", err)
	}
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	if os.Getuid() == 0 {
		// Installing as the run container's own uid keeps every file readable
		// to it without trusting the package's file modes.
		user = "1000:1000"
		if err := os.Chown(pkgDir, 1000, 1000); err != nil {
			return nil, "", fmt.Errorf("cannot prepare the package cache: %v", err)
		}
	}

	cas, caEnv, err := caMounts(sp.Kind)
	if err != nil {
		return nil, "", err
	}
	env := []string{
		"HOME=/tmp/home",
		"MCPCAGE_MOUNT=" + MountPoint,
		"MCPCAGE_NAME=" + sp.Name,
		"MCPCAGE_REQUIREMENT=" + sp.Requirement(version),
	}
	if req.Bin != "" {
		// The command is then chosen on the host (withBin): a package with
		// several commands, or none of its own name, installs all the same.
		env = append(env, "MCPCAGE_BIN=1")
	}
	env = append(env, caEnv...)
	var cmd []string
	registry := ""
	switch sp.Kind {
	case "npx":
		flags := "--ignore-scripts"
		if req.AllowScripts {
			flags = ""
		} else {
			env = append(env, "MCPCAGE_SCAN_SCRIPTS=1")
		}
		if len(req.AllowDeps) > 0 {
			env = append(env, "MCPCAGE_ALLOW_DEPS="+strings.Join(req.AllowDeps, ","))
		}
		registry = npmRegistry()
		if registry != "" {
			env = append(env, "npm_config_registry="+registry)
		} else {
			registry = "https://registry.npmjs.org/"
		}
		env = append(env,
			"MCPCAGE_NPM_FLAGS="+flags,
			"MCPCAGE_NPM_REPORT="+npmReport,
			"MCPCAGE_NPM_FAILED="+npmFailed,
			"npm_config_cache=/tmp/npm-cache",
			"npm_config_update_notifier=false",
			"npm_config_userconfig=/tmp/home/.npmrc",
		)
		cmd = []string{"sh", "-c", npmScript}
	case "uvx":
		pe := pipEnv()
		env = append(env, pe...)
		registry = "https://pypi.org/simple"
		for _, kv := range pe {
			if k, v, _ := strings.Cut(kv, "="); k == "PIP_INDEX_URL" || k == "UV_INDEX_URL" || k == "UV_DEFAULT_INDEX" {
				registry = v
				break
			}
		}
		env = append(env, "MCPCAGE_PIP_DRIVER="+pipDriver+pipReport, "PIP_NO_CACHE_DIR=1", "UV_CACHE_DIR=/tmp/uv-cache")
		cmd = []string{"sh", "-c", `exec python3 -c "$MCPCAGE_PIP_DRIVER"`}
	}
	what := "npm"
	if sp.Kind == "uvx" {
		what = "wheels"
	}
	step := req.Progress.Start("installing "+sp.Requirement(version),
		fmt.Sprintf("installing %s (%s from %s) in a container", sp.Requirement(version), what, redactURL(registry)))
	defer step.Stop()

	mounts := append([]mount.Mount{{
		Type:   mount.TypeBind,
		Source: pkgDir,
		Target: MountPoint,
	}}, cas...)
	ictx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	out, errOut, code, err := job{image: image, cmd: cmd, env: env, user: user, mounts: mounts, labels: req.Labels}.run(ictx, cli)
	if err != nil {
		if ctx.Err() == nil && ictx.Err() != nil {
			return nil, "", fmt.Errorf("installing %s timed out", sp.Requirement(version))
		}
		return nil, "", err
	}
	rep, perr := parseReport(out, req.Bin != "")
	if perr != nil || code != 0 {
		showTail(stderr, errOut)
		if perr == nil {
			perr = fmt.Errorf("the install container exited with status %d", code)
		}
		return nil, "", fmt.Errorf("installing %s failed: %v", sp.Requirement(version), perr)
	}
	if f := rep.Failure; f != nil {
		switch f.Kind {
		case "source-only":
			return nil, "", &SourceOnlyError{Package: f.Package, Required: sp.Name}
		case "not-found":
			nf := &NotFoundError{Kind: sp.Kind, Package: sp.Requirement(version), Registry: redactURL(registry), Detail: f.Detail}
			if sp.Kind == "uvx" && f.Package != "" && f.Package != sp.Name {
				nf.Package, nf.Detail = f.Package, f.Detail+", needed by "+sp.Name
			}
			return nil, "", nf
		case "foreign":
			return nil, "", &ForeignError{Package: sp.Requirement(version), Registry: redactURL(registry), Detail: f.Detail}
		case "unreachable":
			// Not a package that does not exist: the registry never answered.
			// npm's driver names the cause; the registry is ours to name.
			detail := f.Detail
			if sp.Kind == "npx" {
				detail = "the npm registry " + redactURL(registry) + " " + detail
			}
			return nil, "", fmt.Errorf("cannot install %s: %s", sp.Requirement(version), detail)
		}
		showTail(stderr, errOut)
		return nil, "", fmt.Errorf("installing %s failed: %s", sp.Requirement(version), f.Detail)
	}
	if sp.Kind == "npx" && rep.Name != sp.Name {
		return nil, "", fmt.Errorf("installing %s failed: the container reported package %q", sp.Name, clean(rep.Name, 214))
	}
	if err := makeReadable(pkgDir); err != nil {
		return nil, "", fmt.Errorf("cannot fix permissions in the package cache: %v", err)
	}

	m := &Meta{
		Kind:      sp.Kind,
		Package:   sp.Name,
		Extras:    strings.ToLower(sp.Extras),
		Version:   rep.Version,
		Image:     image,
		ImageID:   imageID,
		Command:   rep.Command,
		Env:       runEnv(sp.Kind),
		Scripts:   req.AllowScripts,
		Installed: time.Now().UTC().Truncate(time.Second),
		Tree:      rep.Tree,
	}
	for _, s := range rep.Skipped {
		m.Skipped = append(m.Skipped, fmt.Sprintf("%s@%s (%s)", s.Name, s.Version, strings.Join(s.Scripts, ", ")))
	}
	if len(m.Skipped) > 0 {
		fmt.Fprintf(stderr, "mcpcage: warning: install scripts of %d package(s) were not run (pass --allow-scripts to run them): %s\n",
			len(m.Skipped), strings.Join(m.Skipped, "; "))
	}
	if err := writeJSONAtomic(filepath.Join(tmp, "meta.json"), m); err != nil {
		return nil, "", fmt.Errorf("cannot write the package cache: %v", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, "", err
	}
	final := filepath.Join(root, sp.Kind, EntryKey(sp.Kind, sp.Name+m.Extras, m.Version, imageID))
	if _, err := os.Lstat(final); err == nil {
		// --update of a version already cached: replace it. A server running
		// from the old entry still reads it through its mount, so it is set
		// aside in tmp/ (dated now) for sweepTmp to remove a day later.
		old := filepath.Join(root, "tmp", "replaced-"+filepath.Base(tmp))
		if err := os.Rename(final, old); err != nil {
			return nil, "", fmt.Errorf("cannot replace %s: %v", final, err)
		}
		now := time.Now()
		_ = os.Chtimes(old, now, now)
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, "", fmt.Errorf("cannot move the install into the package cache: %v", err)
	}
	step.Done("installed %s %s", sp.Name, m.Version)
	return m, final, nil
}

// sweepTmp removes what installs killed midway left in tmp/. Anything older
// than a day is far past the install timeout, so no live install owns it.
func sweepTmp(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// runEnv is the environment the run container needs for an installed package.
func runEnv(kind string) []string {
	if kind == "uvx" {
		return []string{
			"PATH=" + MountPoint + "/venv/bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/bin",
			"VIRTUAL_ENV=" + MountPoint + "/venv",
			"PYTHONDONTWRITEBYTECODE=1",
			"PYTHONUNBUFFERED=1",
		}
	}
	return []string{
		"PATH=" + MountPoint + "/node_modules/.bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/bin",
		"NO_UPDATE_NOTIFIER=1",
		"npm_config_update_notifier=false",
	}
}

// makeReadable gives everyone read (and search) access to the installed
// tree, so the run container's user can use it whoever owns the files. It
// never follows symbolic links, which the package controls.
func makeReadable(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || !(d.IsDir() || d.Type().IsRegular()) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o444
		if d.IsDir() || mode&0o111 != 0 {
			mode |= 0o111
		}
		mode &^= 0o022 // nothing in the cache is writable by others
		if mode != info.Mode().Perm() {
			return os.Chmod(p, mode)
		}
		return nil
	})
}

// CABundle is the CA files the user configured, as read-only mounts and the
// variables that name them in a container: the install container's, and a
// running server's that may reach the network (a TLS-intercepting proxy
// breaks every HTTPS call otherwise). kind is npx, uvx or image.
func CABundle(kind string) ([]mount.Mount, []string, error) { return caMounts(kind) }

// caMounts mounts the CA files the user configured into the install container.
func caMounts(kind string) ([]mount.Mount, []string, error) {
	var mounts []mount.Mount
	var env []string
	vars := map[string]string{}
	for _, k := range []string{"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "PIP_CERT"} {
		v := os.Getenv(k)
		if v == "" {
			continue
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return nil, nil, fmt.Errorf("CA bundle %s (from %s): %v", v, k, err)
		}
		st, err := os.Stat(abs)
		if err != nil || !st.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("CA bundle %s (from %s) cannot be read: fix or unset %s", v, k, k)
		}
		target := "/etc/mcpcage/ca/" + k + ".pem"
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: abs, Target: target, ReadOnly: true})
		vars[k] = target
		env = append(env, k+"="+target)
	}
	// npm's own cafile setting replaces its bundle, as it does for npm itself.
	if kind == "npx" {
		if f := npmCAFile(); f != "" {
			if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
				return nil, nil, fmt.Errorf("CA bundle %s (npm's cafile setting) cannot be read: fix or remove it", f)
			}
			target := "/etc/mcpcage/ca/npm-cafile.pem"
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: f, Target: target, ReadOnly: true})
			env = append(env, "npm_config_cafile="+target)
		}
	}
	// A full bundle for OpenSSL also serves as extra CAs for Node and as
	// pip's bundle, when the user set only SSL_CERT_FILE.
	if ssl := vars["SSL_CERT_FILE"]; ssl != "" {
		if kind == "npx" && vars["NODE_EXTRA_CA_CERTS"] == "" {
			env = append(env, "NODE_EXTRA_CA_CERTS="+ssl)
		}
		if kind == "uvx" && vars["PIP_CERT"] == "" {
			env = append(env, "PIP_CERT="+ssl)
		}
	}
	return mounts, env, nil
}

// showTail prints the end of the installer's output, made safe for a terminal.
func showTail(w io.Writer, b []byte) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			fmt.Fprintf(w, "  | %s\n", clean(l, 300))
		}
	}
}
