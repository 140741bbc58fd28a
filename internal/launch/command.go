package launch

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Command is a server's command line as a client config writes it, understood
// well enough to cage it: which launcher, which package, which arguments.
type Command struct {
	Kind    string   // "npx", "uvx" or "image"
	Spec    string   // the package as typed, version included ("pkg@1.2.3", "pkg==1.0")
	Package string   // the package name without version
	Version string   // the version as typed, "" when none was given
	Image   string   // for "image": the image reference
	Args    []string // the server's own arguments
}

// Name is the server's default name: see DeriveName.
func (c Command) Name() string { return DeriveName(c.Kind, c.Package, c.Image) }

// UsageError is a command line mcpcage refuses, with what to do instead.
type UsageError struct {
	Msg  string
	Hint string
}

func (e *UsageError) Error() string { return e.Msg }

func refuse(hint, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

const hintOther = "mcpcage cages servers started with npx or uvx; a server that ships as a Docker image runs with `mcpcage run --image IMAGE -- ARGS`"

// ParseCommand reads a server command line: `npx [-y] PKG ARGS...` or
// `uvx PKG ARGS...`. Anything else is refused with a *UsageError that says
// why: mcpcage only builds cages for packages it installs itself, because a
// local script or binary would need the user's files and toolchain.
func ParseCommand(argv []string) (Command, error) {
	if len(argv) == 0 {
		return Command{}, refuse("write the server's command after `--`, e.g. `mcpcage run -- npx -y @modelcontextprotocol/server-everything`", "no server command given")
	}
	switch launcherName(argv[0]) {
	case "npx":
		return parseNpx(argv[1:])
	case "uvx":
		return parseUvx(argv[1:])
	case "npm", "pnpm", "yarn", "bunx", "pnpx":
		return Command{}, refuse("write the same server as `npx -y PACKAGE ARGS`", "%q is not supported: only npx and uvx commands can be caged", argv[0])
	case "uv":
		return Command{}, refuse("write the same server as `uvx PACKAGE ARGS`", "\"uv\" is not supported: only npx and uvx commands can be caged")
	}
	return Command{}, refuse(hintOther, "%q cannot be caged: mcpcage installs the server's package itself, so a local program or script is refused", argv[0])
}

// launcherName is the program's base name, so /usr/local/bin/npx and
// npx.cmd (Windows client configs) are npx too.
func launcherName(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	b := strings.ToLower(path.Base(p))
	for _, ext := range []string{".cmd", ".exe", ".bat", ".ps1"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

func parseNpx(args []string) (Command, error) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		switch a {
		case "-y", "--yes", "-q", "--quiet", "--silent", "--no-install=false":
			continue
		case "-p", "--package", "-c", "--call":
			return Command{}, refuse("write `npx -y PACKAGE ARGS`, with the package that provides the server first", "npx %s is not supported by mcpcage run", a)
		}
		if strings.HasPrefix(a, "--package=") {
			return Command{}, refuse("write `npx -y PACKAGE ARGS`, with the package that provides the server first", "npx --package is not supported by mcpcage run")
		}
		return Command{}, refuse("remove the option or write `npx -y PACKAGE ARGS`", "npx option %q is not supported by mcpcage run", a)
	}
	if i >= len(args) {
		return Command{}, refuse("write `npx -y PACKAGE ARGS`", "npx: no package given")
	}
	spec := args[i]
	name, version, err := splitNpmSpec(spec)
	if err != nil {
		return Command{}, err
	}
	return Command{Kind: "npx", Spec: spec, Package: name, Version: version, Args: clone(args[i+1:])}, nil
}

const hintRegistry = "only packages from the registry can be caged: give its name, optionally with a version (`pkg@1.2.3`)"

// splitNpmSpec splits "name[@version]" and refuses what is not a registry
// package: git URLs, tarballs, local folders, aliases. The grammar is the
// install phase's (ParseSpec), so what is accepted here installs.
func splitNpmSpec(spec string) (name, version string, err error) {
	if strings.Contains(spec, ":") || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "~") || strings.Contains(spec, `\`) {
		return "", "", refuse(hintRegistry, "npx package %q is not a registry package (URL, git or local path)", spec)
	}
	sp, err := ParseSpec("npx", spec)
	if err != nil {
		return "", "", refuse(hintRegistry, "npx: %v", err)
	}
	name = sp.Name
	if at := strings.LastIndex(spec, "@"); at > 0 {
		version = spec[at+1:]
	}
	return name, version, nil
}

func parseUvx(args []string) (Command, error) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		switch a {
		case "-q", "--quiet", "--no-progress":
			continue
		case "--from", "--with", "--python", "-p", "--index-url", "--extra-index-url", "--index":
			return Command{}, refuse("write `uvx PACKAGE ARGS`; registry settings come from your uv/pip configuration", "uvx %s is not supported by mcpcage run", a)
		}
		return Command{}, refuse("remove the option or write `uvx PACKAGE ARGS`", "uvx option %q is not supported by mcpcage run", a)
	}
	if i >= len(args) {
		return Command{}, refuse("write `uvx PACKAGE ARGS`", "uvx: no package given")
	}
	spec := args[i]
	name, version, err := splitPypiSpec(spec)
	if err != nil {
		return Command{}, err
	}
	return Command{Kind: "uvx", Spec: spec, Package: name, Version: version, Args: clone(args[i+1:])}, nil
}

// splitPypiSpec splits "name[extras][==version]" or "name@version".
func splitPypiSpec(spec string) (name, version string, err error) {
	if strings.Contains(spec, ":") || strings.Contains(spec, "/") || strings.Contains(spec, `\`) || strings.HasPrefix(spec, ".") {
		return "", "", refuse(hintRegistry, "uvx package %q is not a registry package (URL, git or local path)", spec)
	}
	if strings.ContainsAny(spec, "<>!~;, ") || strings.Count(spec, "=") == 1 {
		return "", "", refuse("give an exact version: `pkg==1.2.3`", "uvx package %q: only an exact version can be caged", spec)
	}
	if _, err := ParseSpec("uvx", spec); err != nil {
		return "", "", refuse(hintRegistry, "uvx: %v", err)
	}
	name = spec
	if k := strings.Index(name, "=="); k > 0 {
		name, version = name[:k], name[k+2:]
	} else if k := strings.Index(name, "@"); k > 0 {
		name, version = name[:k], name[k+1:]
	}
	if k := strings.Index(name, "["); k >= 0 {
		name = name[:k]
	}
	return name, version, nil
}

func clone(s []string) []string { return append([]string(nil), s...) }

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidName checks a server name given with --name. Names become file names
// under $MCPCAGE_HOME and part of container names, so they are kept to
// letters, digits, '.', '_' and '-', starting with a letter or digit, at most
// 63 characters.
func ValidName(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("invalid server name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", name)
	}
	if name == "." || name == ".." {
		return errors.New("invalid server name")
	}
	return nil
}

// DeriveName gives a server its default name from how it is launched, so the
// same server gets the same pins, audit entries and private HOME every time:
//
//	npx  @scope/pkg@1.2   -> scope-pkg   (scope kept: @stripe/mcp is not @other/mcp)
//	npx  pkg              -> pkg
//	uvx  My_Pkg==1.0      -> my-pkg      (PEP 503 normalised)
//	image ghcr.io/o/srv:1 -> srv         (last path element, no tag or digest)
//
// kind is "npx", "uvx" or "image"; pkg is the package name without version;
// img the image reference. The result always passes ValidName.
func DeriveName(kind, pkg, img string) string {
	var n string
	switch kind {
	case "npx":
		n = strings.ReplaceAll(strings.TrimPrefix(pkg, "@"), "/", "-")
	case "uvx":
		n = strings.ToLower(pkg)
		n = strings.NewReplacer("_", "-", ".", "-").Replace(n)
		for strings.Contains(n, "--") {
			n = strings.ReplaceAll(n, "--", "-")
		}
	case "image":
		n = img
		if k := strings.Index(n, "@"); k >= 0 {
			n = n[:k]
		}
		if strings.HasPrefix(n, "sha256:") {
			n = "image-" + strings.TrimPrefix(n, "sha256:")
			if len(n) > 18 {
				n = n[:18]
			}
		} else {
			if k := strings.LastIndex(n, "/"); k >= 0 {
				n = n[k+1:]
			}
			if k := strings.Index(n, ":"); k >= 0 {
				n = n[:k]
			}
		}
	default:
		n = pkg
	}
	return sanitizeName(n)
}

func sanitizeName(n string) string {
	b := []byte(n)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	n = strings.TrimLeft(string(b), "._-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "._-")
	}
	if n == "" {
		return "server"
	}
	return n
}
