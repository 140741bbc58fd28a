package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// Command is a server's command line as a client config writes it, understood
// well enough to cage it: which launcher, which package, which arguments.
type Command struct {
	Kind    string // "npx", "uvx", "image" or "exec" (a local program)
	Spec    string // the package as typed, version included ("pkg@1.2.3", "pkg==1.0")
	Package string // the package name without version
	Version string // the version as typed, "" when none was given
	Image   string // for "image": the image reference
	// Bin is the command to run from the package when the command line names
	// it (`npx -p PKG CMD`, `uvx --from PKG CMD`); "" for the package's own.
	Bin string
	// Program is, for "exec", the local program as written (see FindProgram).
	Program string
	Args    []string // the server's own arguments
}

// Name is the server's default name: see DeriveName.
func (c Command) Name() string { return DeriveName(c.Kind, c.Package, c.Image) }

// UsageError is a command line mcpcage refuses, with what to do instead.
type UsageError struct {
	Msg string
	Fix string // what to do instead; "" for nothing to say
}

func (e *UsageError) Error() string { return e.Msg }

// Hint says what to do: the one interface every error with a hint has,
// read where the command's error is printed.
func (e *UsageError) Hint() string { return e.Fix }

func refuse(hint, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), Fix: hint}
}

const hintOther = "mcpcage cages servers started with npx or uvx; a server that ships as a Docker image runs with `mcpcage run --image IMAGE -- ARGS`"

// ParseCommand reads a server command line: `npx [-y] PKG ARGS...`,
// `npx -p PKG CMD ARGS...`, `uvx PKG ARGS...`, `uvx --from PKG CMD ARGS...`,
// or a local program (Kind "exec": `/usr/local/bin/some-mcp-server ARGS`,
// checked by FindProgram when it runs). Script interpreters (`python
// server.py`, `node index.js`) and anything else are refused with a
// *UsageError that says why: a script needs the user's files and toolchain.
func ParseCommand(argv []string) (Command, error) {
	if len(argv) == 0 {
		return Command{}, refuse("write the server's command after `--`, e.g. `mcpcage run -- npx -y @modelcontextprotocol/server-everything`", "no server command given")
	}
	switch launcherName(argv[0]) {
	case "npx":
		return npxRunner().parse(argv[1:])
	case "uvx":
		return uvxRunner().parse(argv[1:])
	case "npm", "pnpm", "yarn", "bunx", "pnpx":
		return Command{}, refuse("write the same server as `npx -y PACKAGE ARGS`", "%q is not supported: only npx and uvx commands can be caged", argv[0])
	case "uv":
		return Command{}, refuse("write the same server as `uvx PACKAGE ARGS`", "\"uv\" is not supported: only npx and uvx commands can be caged")
	}
	if IsInterpreter(argv[0]) {
		return Command{}, refuse(hintOther+"; a compiled program runs caged as `mcpcage run -- /path/to/program ARGS`",
			"%q cannot be caged: it runs a script with your interpreter, libraries and files, which the cage does not have", argv[0])
	}
	switch launcherName(argv[0]) {
	case "docker", "podman", "":
		return Command{}, refuse(hintOther, "%q cannot be caged: mcpcage runs images itself (--image)", argv[0])
	}
	// A local program: whether it is one the cage can run (an ELF for this
	// machine, static or glibc) is FindProgram's to say, on the host.
	return Command{Kind: "exec", Program: argv[0], Package: launcherName(argv[0]), Args: clone(argv[1:])}, nil
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

// runner is how one package runner's command line reads: its options that
// change nothing for the cage, the option that names the package whose
// command runs (npx -p, uvx --from), the options it refuses, and its
// package grammar.
type runner struct {
	kind  string // "npx" or "uvx"
	plain string // the usage with the package's own command: "`npx -y PACKAGE ARGS`"
	// from and fromShort are the option naming the package ("--package",
	// "-p"; fromShort "" for none), shown as fromShown; fromUsage is its
	// usage and oneFrom the hint for a second one.
	from, fromShort, fromShown, fromUsage, oneFrom string
	quiet                                          []string
	// refused returns the error for an option it refuses, else nil.
	refused func(a string) error
	split   func(spec string) (name, version string, err error)
}

func npxRunner() runner {
	return runner{
		kind: "npx", plain: "`npx -y PACKAGE ARGS`",
		from: "--package", fromShort: "-p", fromShown: "-p", fromUsage: "`npx -p PACKAGE COMMAND ARGS`",
		oneFrom: "give one -p PACKAGE: mcpcage installs one package per server",
		quiet:   []string{"-y", "--yes", "--yes=true", "-q", "--quiet", "--silent", "--no-install=false"},
		refused: func(a string) error {
			if a == "-c" || a == "--call" {
				return refuse("write `npx -y PACKAGE ARGS` or `npx -p PACKAGE COMMAND ARGS`", "npx %s runs a shell command, which mcpcage cannot cage", a)
			}
			return nil
		},
		split: splitNpmSpec,
	}
}

func uvxRunner() runner {
	return runner{
		kind: "uvx", plain: "`uvx PACKAGE ARGS`",
		from: "--from", fromShown: "--from", fromUsage: "`uvx --from PACKAGE COMMAND ARGS`",
		oneFrom: "give one --from PACKAGE",
		quiet:   []string{"-q", "--quiet", "--no-progress"},
		refused: func(a string) error {
			switch a {
			case "--with", "--python", "-p", "--index-url", "--extra-index-url", "--index":
				return refuse("write `uvx PACKAGE ARGS` or `uvx --from PACKAGE COMMAND ARGS`; registry settings come from your uv/pip configuration", "uvx %s is not supported by mcpcage run", a)
			}
			return nil
		},
		split: splitPypiSpec,
	}
}

// parse reads the runner's arguments (after "npx" or "uvx").
func (r runner) parse(args []string) (Command, error) {
	i := 0
	from := "" // the package named by r.from, and args[i] is then its command
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		switch {
		case slices.Contains(r.quiet, a):
			continue
		case a == r.from || a == r.fromShort || strings.HasPrefix(a, r.from+"="):
			if from != "" {
				return Command{}, refuse(r.oneFrom, "%s: more than one %s", r.kind, r.from)
			}
			if v, ok := strings.CutPrefix(a, r.from+"="); ok {
				from = v
			} else if i+1 < len(args) {
				i++
				from = args[i]
			}
			if from == "" {
				return Command{}, refuse("write "+r.fromUsage, "%s %s: no package given", r.kind, a)
			}
			continue
		}
		if err := r.refused(a); err != nil {
			return Command{}, err
		}
		return Command{}, refuse("remove the option or write "+r.plain, "%s option %q is not supported by mcpcage run", r.kind, a)
	}
	if i >= len(args) {
		if from != "" {
			return Command{}, refuse("write "+r.fromUsage, "%s %s %s: no command given", r.kind, r.fromShown, from)
		}
		return Command{}, refuse("write "+r.plain, "%s: no package given", r.kind)
	}
	spec, bin := args[i], ""
	if from != "" {
		spec, bin = from, args[i]
		if !binName.MatchString(bin) {
			return Command{}, refuse("write "+r.fromUsage+", COMMAND one of the package's commands", "%s %s %s: %q is not a command name", r.kind, r.fromShown, from, bin)
		}
	}
	name, version, err := r.split(spec)
	if err != nil {
		return Command{}, err
	}
	return Command{Kind: r.kind, Spec: spec, Package: name, Version: version, Bin: bin, Args: clone(args[i+1:])}, nil
}

// binName is a command a package installs (a file name in its bin folder).
var binName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

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
// same server gets the same pins, audit entries and private HOME every time,
// and two different servers never get the same one. The name spells out the
// whole identity (Identity: registry, namespace and name) in the letters a
// name may hold, so it is injective:
//
//	npx  tavily-mcp@0.2          -> tavily-mcp
//	npx  @stripe/mcp@1.2         -> stripe__mcp          ('/' is "__")
//	npx  @a/b-c, @a-b/c, a-b-c   -> a__b-c, a-b__c, a-b-c
//	uvx  My_Pkg==1.0             -> my-pkg_pypi          (PEP 503 normalised)
//	image ghcr.io/o/srv:1        -> ghcr.io__o__srv_image (tag and digest dropped)
//	image redteam-a/notes        -> redteam-a__notes_image
//	/usr/local/bin/gh-mcp        -> gh-mcp_local          (a local program, by base name)
//	https://mcp.example.com/mcp  -> mcp.example.com__mcp_remote (a remote server; http:,
//	                                a port or a query: shortened form, "_h" and a hash)
//
// Any other character is "_" and two hex digits ("_5f" for '_'). A name
// that would be longer than 63 keeps a prefix and ends in "_h" and 16 hex
// digits of SHA-256 over the identity. No encoding produces "_p", "_i", "_l",
// "_r" or "_h" but these markers, so names of different kinds, and shortened and
// whole names, cannot meet. The result always passes ValidName.
func DeriveName(kind, pkg, img string) string {
	id := Identity(kind, pkg, img)
	readable := strings.TrimPrefix(id, kind+":")
	var marker string
	whole := true
	switch kind {
	case "npx":
		// A scope is '@' and a '/'; a name with only one of them is not
		// npm's, and must not meet the name it looks like.
		whole = strings.HasPrefix(readable, "@") == strings.Contains(readable, "/")
		readable = strings.TrimPrefix(readable, "@")
	case "uvx":
		marker = "_pypi"
	case "exec":
		// A local program, by its base name: the user's own, not a
		// publisher's.
		marker = "_local"
	case "remote":
		// https and a host and path only: anything else (http:, a port, a
		// query, whose ${VAR} or values must not become a file name) is
		// the shortened form, whose hash keeps two URLs apart.
		marker = "_remote"
		rest, ok := strings.CutPrefix(readable, "https://")
		whole = ok && !strings.ContainsAny(rest, "?:#")
		readable = rest
		if !ok {
			readable = strings.TrimPrefix(strings.TrimPrefix(readable, "http://"), "https://")
		}
		if i := strings.IndexAny(readable, "?#"); i >= 0 {
			readable = readable[:i]
		}
	case "image":
		marker = "_image"
		if r, err := reference.ParseNormalizedNamed(readable); err == nil && !strings.HasPrefix(readable, "sha256:") {
			readable = reference.FamiliarName(r)
		}
	default:
		whole = false // no kind of its own to mark it with
	}
	toks := nameTokens(readable)
	n := strings.Join(toks, "") + marker
	if whole && n != "" && len(n) <= 63 && isAlnum(n[0]) {
		return n
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "_h" + hex.EncodeToString(sum[:8])
	var b strings.Builder
	for _, t := range toks {
		if b.Len()+len(t)+len(suffix) > 63 {
			break
		}
		b.WriteString(t)
	}
	prefix := b.String()
	if prefix == "" || !isAlnum(prefix[0]) {
		prefix = "server"
	}
	return prefix + suffix
}

// nameTokens encodes s for a server name, one token per character of s:
// itself for [a-z0-9.-], "__" for '/', "_" and two hex digits for any other
// byte.
func nameTokens(s string) []string {
	toks := make([]string, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-':
			toks = append(toks, string(c))
		case c == '/':
			toks = append(toks, "__")
		default:
			toks = append(toks, fmt.Sprintf("_%02x", c))
		}
	}
	return toks
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
