package launch

//lint:file-ignore ST1005 the messages that start with a capital start with "Python", a name

import (
	"fmt"
	"regexp"
	"strings"
)

// Spec is a package reference as typed after npx or uvx, split and checked.
type Spec struct {
	Kind    string // "npx" or "uvx"
	Name    string // npm name as typed; PyPI name normalised (PEP 503)
	Extras  string // uvx only: "[a,b]" as typed, or ""
	Version string // version, range or tag as typed, or "" for none
	Exact   bool   // Version names exactly one release
}

// The grammar is deliberately narrower than what npm and pip accept: only
// registry packages, never URLs, git remotes, local paths or npm aliases,
// because those would fetch code from places the user's registry settings do
// not govern and could not be pinned by version.
var (
	npmName     = regexp.MustCompile(`^(@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*$`)
	npmVersion  = regexp.MustCompile(`^[A-Za-z0-9^~<>=*+.x_-]+$`)
	semver      = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	pypiName    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	pypiExtras  = regexp.MustCompile(`^\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\]$`)
	pypiVersion = regexp.MustCompile(`^[A-Za-z0-9.!+_-]+$`)
	pypiSep     = regexp.MustCompile(`[-_.]+`)
)

// ParseSpec checks a package reference of the given kind.
func ParseSpec(kind, s string) (Spec, error) {
	switch kind {
	case "npx":
		return parseNPM(s)
	case "uvx":
		return parsePyPI(s)
	}
	return Spec{}, fmt.Errorf("unknown package kind %q: want npx or uvx", kind)
}

func parseNPM(s string) (Spec, error) {
	sp := Spec{Kind: "npx"}
	if len(s) > 256 {
		return sp, fmt.Errorf("npm package %.40q...: too long", s)
	}
	name, version := s, ""
	at := strings.LastIndexByte(s, '@')
	if at > 0 {
		name, version = s[:at], s[at+1:]
		if version == "" {
			return sp, fmt.Errorf("npm package %q: empty version after @", s)
		}
	}
	if !npmName.MatchString(name) || len(name) > 214 {
		return sp, fmt.Errorf("%q is not an npm registry package name: mcpcage installs only packages from the registry (no URLs, git remotes, paths or aliases)", s)
	}
	if version != "" && (!npmVersion.MatchString(version) || strings.HasPrefix(version, "-")) {
		return sp, fmt.Errorf("npm package %q: %q is not a version, range or tag", s, version)
	}
	sp.Name = name
	sp.Version = version
	if semver.MatchString(version) {
		sp.Version = strings.TrimPrefix(version, "v")
		sp.Exact = true
	}
	return sp, nil
}

func parsePyPI(s string) (Spec, error) {
	sp := Spec{Kind: "uvx"}
	if len(s) > 256 {
		return sp, fmt.Errorf("Python package %.40q...: too long", s)
	}
	rest, op, version := s, "", ""
	for _, o := range []string{"==", "@"} {
		if i := strings.Index(s, o); i > 0 {
			rest, op, version = s[:i], o, s[i+len(o):]
			break
		}
	}
	if op != "" && (version == "" || !pypiVersion.MatchString(version) || strings.HasPrefix(version, "-")) {
		return sp, fmt.Errorf("Python package %q: %q is not a version", s, version)
	}
	name, extras := rest, ""
	if i := strings.IndexByte(rest, '['); i > 0 {
		name, extras = rest[:i], rest[i:]
		if !pypiExtras.MatchString(extras) {
			return sp, fmt.Errorf("Python package %q: bad extras %q", s, extras)
		}
	}
	if !pypiName.MatchString(name) {
		return sp, fmt.Errorf("%q is not a Python package name: mcpcage installs only packages from the index, as name, name==VERSION or name@VERSION", s)
	}
	sp.Name = normalizePyPI(name)
	sp.Extras = extras
	if version != "" && version != "latest" {
		sp.Version = version
		sp.Exact = true
	}
	return sp, nil
}

// normalizePyPI is PEP 503's name normalisation.
func normalizePyPI(name string) string {
	return pypiSep.ReplaceAllString(strings.ToLower(name), "-")
}

// Requirement is the spec in the installer's own syntax, for a resolved exact
// version when version is not empty.
func (s Spec) Requirement(version string) string {
	if version == "" {
		version = s.Version
	}
	switch s.Kind {
	case "npx":
		if version == "" {
			return s.Name
		}
		return s.Name + "@" + version
	default:
		if version == "" {
			return s.Name + s.Extras
		}
		return s.Name + s.Extras + "==" + version
	}
}

func (s Spec) String() string {
	if s.Version == "" {
		return s.Name
	}
	if s.Kind == "uvx" {
		return s.Name + "==" + s.Version
	}
	return s.Name + "@" + s.Version
}
