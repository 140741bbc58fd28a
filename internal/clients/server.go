package clients

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/secrets"
)

// Var is a name and the value written for it in the file.
type Var struct {
	Name  string `json:"name"`
	Value string `json:"-"` // never shown: it may be a secret
}

// Server is one server entry as a client sees it.
type Server struct {
	Name string
	// Where is the key path from the file's root to the entry.
	Where []string

	Command    string
	HasCommand bool
	Args       []string
	Env        []Var
	// PassEnv are variables the client passes through by name (Codex env_vars).
	PassEnv   []string
	URL       string
	Headers   []Var
	EnvFile   string // VS Code's envFile: variables the entry does not name
	Transport string // the entry's "type", if any
	Disabled  bool
	// Problem, when set, says why the entry cannot be edited in place.
	Problem string
}

// Scope describes where in the file the entry is, for people: "" for the
// usual place, or e.g. "project /home/me/src" for Claude Code's per-project
// servers.
func (s Server) Scope() string {
	if len(s.Where) >= 4 && s.Where[0] == "projects" {
		return "project " + s.Where[1]
	}
	return ""
}

// Kind is how a server is started.
type Kind string

const (
	KindNpx     Kind = "npx"
	KindUvx     Kind = "uvx"
	KindImage   Kind = "docker image"
	KindCommand Kind = "local command"
	KindRemote  Kind = "remote URL"
)

// Self is the running mcpcage binary, to recognise entries it wrote. Tests
// may replace it.
var Self = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
})

// IsMcpcage reports whether a command names mcpcage.
func IsMcpcage(command string) bool {
	base := strings.ToLower(baseName(command))
	base = strings.TrimSuffix(base, ".exe")
	if base == "mcpcage" || strings.HasPrefix(base, "mcpcage-") {
		return true
	}
	self := Self()
	if self == "" || command == "" {
		return false
	}
	if command == self {
		return true
	}
	// Only an absolute path can name this very binary under another name
	// (a package manager's shim); a bare name would be looked up in the
	// current directory.
	if !filepath.IsAbs(command) {
		return false
	}
	a, err1 := os.Stat(command)
	b, err2 := os.Stat(self)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// baseName works for both / and \ separated paths, whatever the host.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Caged reports whether the entry starts its server through `mcpcage run`.
func (s Server) Caged() bool {
	return s.HasCommand && IsMcpcage(s.Command) && len(s.Args) > 0 && s.Args[0] == "run"
}

// Unwrapped returns the command line that runs inside the cage for a caged
// entry written in the wrapped form (after the first "--"), and ok=false
// otherwise.
func (s Server) Unwrapped() (command string, args []string, ok bool) {
	if !s.Caged() {
		return "", nil, false
	}
	for i, a := range s.Args {
		if a == "--" {
			if i+1 < len(s.Args) {
				return s.Args[i+1], s.Args[i+2:], true
			}
			return "", nil, false
		}
	}
	return "", nil, false
}

// Restorable returns the command line `mcpcage unwrap` may put back for a
// caged entry, and why not when it may not: only a command mcpcage itself
// accepts (npx, uvx, a compiled local program) after "--", and not under
// --image (whose arguments are the image's, not a command). Anything else
// (a shell, a script)
// cannot be what protect --fix wrapped: someone else wrote it, perhaps a
// planted project file, and putting it back would run their choice uncaged.
// Flags a person added (--mount, --allow-net) do not matter. unwrap also
// asks the ledger whether --fix wrapped this very command (Ledger.Wrapped).
func (s Server) Restorable() (command string, args []string, why string) {
	cmd, args, ok := s.Unwrapped()
	if !ok {
		return "", nil, "it is not in the form protect --fix writes (no command after --)"
	}
	for _, f := range s.CageFlags() {
		if f == "--image" || strings.HasPrefix(f, "--image=") {
			return "", nil, "it runs an image (--image): what follows -- is the image's arguments, not a command protect --fix wrapped"
		}
	}
	if _, err := launch.ParseCommand(append([]string{cmd}, args...)); err != nil {
		return "", nil, "the command after -- is not one protect --fix cages"
	}
	return cmd, args, ""
}

// CageFlags are mcpcage's own flags in a caged entry (between "run" and "--").
func (s Server) CageFlags() []string {
	if !s.Caged() {
		return nil
	}
	var fl []string
	for _, a := range s.Args[1:] {
		if a == "--" {
			break
		}
		fl = append(fl, a)
	}
	return fl
}

// Kind says how the server starts; for a caged entry, how the server inside
// the cage starts.
func (s Server) Kind() Kind {
	if s.URL != "" || s.RemoteCaged() || (!s.HasCommand && (s.Transport == "http" || s.Transport == "sse" || s.Transport == "streamable-http")) {
		return KindRemote
	}
	cmd, args := s.Command, s.Args
	if c, a, ok := s.Unwrapped(); ok {
		cmd, args = c, a
	} else if s.Caged() {
		for _, f := range s.CageFlags() {
			if f == "--image" || strings.HasPrefix(f, "--image=") {
				return KindImage
			}
		}
	}
	return commandKind(cmd, args)
}

func commandKind(cmd string, args []string) Kind {
	base := strings.ToLower(baseName(cmd))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		base = strings.TrimSuffix(base, ext)
	}
	switch base {
	case "npx":
		return KindNpx
	case "uvx":
		return KindUvx
	case "docker", "podman":
		if len(args) > 0 && (args[0] == "run" || (args[0] == "container" && len(args) > 1 && args[1] == "run")) {
			return KindImage
		}
	}
	return KindCommand
}

// Cageable reports whether `protect --fix` can cage the entry, and if not,
// why not (a hint for the person).
func (s Server) Cageable() (bool, string) {
	if s.Caged() {
		return false, "already caged"
	}
	switch s.Kind() {
	case KindRemote:
		return s.remoteCageable()
	case KindImage:
		img := "IMAGE"
		if d := parseDockerRun(s.Args); d.image != "" {
			img = d.image
		}
		return false, "it ships as a Docker image: cage it by hand with `mcpcage run --image " + img + "`"
	case KindCommand:
		if f := strings.Fields(s.Command); len(f) > 1 && commandKind(f[0], nil) != KindCommand {
			return false, "the command and its arguments are one string; write the command alone and the arguments in args, then run --fix again"
		}
		if s.Problem != "" {
			return false, s.Problem
		}
		if launch.IsInterpreter(s.Command) {
			return false, fmt.Sprintf("%q runs a script with your interpreter, libraries and files, which a cage does not have: leave it, or start the server from its npm or PyPI package (npx, uvx), its image, or a compiled program", s.Command)
		}
		// A compiled program runs caged in the base image, itself mounted
		// read-only: the same check `mcpcage run` makes.
		userHome, _ := os.UserHomeDir()
		if _, err := launch.FindProgram(s.Command, userHome, ""); err != nil {
			return false, err.Error()
		}
		if len(s.Args) == 0 {
			return false, "it has no arguments, and --fix only rewrites entries whose args are not empty: cage it by hand, command mcpcage, args [\"run\", \"--\", \"" + s.Command + "\"]"
		}
	}
	if s.Problem != "" {
		return false, s.Problem
	}
	if len(s.Args) == 0 {
		return false, "no args: there is no package to run"
	}
	// The same parser `mcpcage run` uses: an entry is caged only if run
	// will accept it.
	if _, err := launch.ParseCommand(append([]string{s.Command}, s.Args...)); err != nil {
		var ue *launch.UsageError
		if errors.As(err, &ue) && ue.Fix != "" {
			return false, err.Error() + "; " + ue.Fix
		}
		return false, err.Error()
	}
	for _, n := range s.EnvNames() {
		if !envName.MatchString(n) {
			return false, fmt.Sprintf("env variable %q cannot be passed by name to the cage", n)
		}
	}
	return true, ""
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// WrapArgs is what a cageable entry's args start with once caged; the
// original command and args follow.
func WrapArgs(s Server) []string {
	out := []string{"run"}
	if n := CageName(s.Name); n != "" {
		out = append(out, "--name="+n)
	}
	for _, v := range s.Env {
		out = append(out, "--env="+v.Name)
	}
	for _, n := range s.PassEnv {
		out = append(out, "--env="+n)
	}
	return append(out, "--")
}

// CageName is the --name given to `mcpcage run` for a server entry: the
// entry's name when `mcpcage run` accepts it (letters, digits, '.', '_', '-',
// at most 63, see launch.ValidName), else the name with every run of other
// characters made one '-', trimmed; "" when nothing is left, and then run
// derives the name from the package.
func CageName(name string) string {
	if launch.ValidName(name) == nil {
		return name
	}
	var b strings.Builder
	dash := false
	for _, r := range name {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	n := strings.Trim(b.String(), "._-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "._-")
	}
	if launch.ValidName(n) != nil {
		return ""
	}
	return n
}

// Warnings are what a person should know before caging the entry.
func (s Server) Warnings() []string {
	if s.EnvFile != "" {
		return []string{"it loads variables from envFile " + s.EnvFile + "; the cage gets only the variables its entry names: add --env NAME to its args for each one it needs"}
	}
	return nil
}

// EnvNames are the names of every variable the client gives the server.
func (s Server) EnvNames() []string {
	var ns []string
	for _, v := range s.Env {
		ns = append(ns, v.Name)
	}
	return append(ns, s.PassEnv...)
}

// Secrets are the clear-text secrets in the entry, redacted.
func (s Server) Secrets() []secrets.Finding {
	var out []secrets.Finding
	for _, v := range s.Env {
		if kind, red, ok := secrets.Check(v.Name, v.Value); ok {
			out = append(out, secrets.Finding{Where: "env " + v.Name, Kind: kind, Redacted: red})
		}
	}
	out = append(out, secrets.Args(s.Args)...)
	for _, h := range s.Headers {
		if kind, red, ok := secrets.Check(h.Name, h.Value); ok {
			out = append(out, secrets.Finding{Where: "header " + h.Name, Kind: kind, Redacted: red})
		}
	}
	if s.URL != "" {
		out = append(out, secrets.URL(s.URL)...)
	}
	return out
}

// Reach says what the server can reach as configured.
type Reach struct {
	Home    bool     `json:"home"`    // the user's whole home directory
	Network bool     `json:"network"` // the network
	Env     []string `json:"env"`     // names of the variables it is given
	Mounts  []string `json:"mounts,omitempty"`
	// Hosts are a caged server's --allow-host list: the network, to those
	// hosts only.
	Hosts []string `json:"hosts,omitempty"`
	// Remote is the address a caged remote server is reached at (run
	// --url), its query's values redacted.
	Remote string `json:"remote,omitempty"`
	// Refused says why `mcpcage run` would refuse a caged entry as it is
	// written (a --mount of a path that does not exist, a bad flag).
	Refused string `json:"refused,omitempty"`
}

// Reach says what the server can reach: uncaged local servers reach all the
// user can; a caged one's is its plan's (the caller's: internal/plan), of
// which this gives only the variables.
func (s Server) Reach() Reach {
	r := Reach{Env: s.EnvNames()}
	if r.Env == nil {
		r.Env = []string{}
	}
	switch {
	case s.Kind() == KindRemote && !s.Caged():
		// A remote server reaches what its operator lets it; nothing local.
	case s.Caged():
		// What a cage reaches is its plan's (internal/plan, as run makes
		// it from the entry's arguments): the caller fills it in.
	case s.Kind() == KindImage && !s.Caged():
		// Docker's own defaults: the network, and only the volumes given.
		d := parseDockerRun(s.Args)
		r.Network = !d.noNetwork
		r.Mounts = d.volumes
	default:
		r.Home, r.Network = true, true
	}
	return r
}

type dockerRun struct {
	image     string
	noNetwork bool
	volumes   []string
}

// dockerValueFlags are the `docker run` flags that take a value as the next
// argument, so that the image is found after them.
var dockerValueFlags = map[string]bool{
	"-e": true, "--env": true, "--env-file": true, "-v": true, "--volume": true, "--mount": true,
	"--name": true, "-p": true, "--publish": true, "--network": true, "--net": true, "-w": true,
	"--workdir": true, "-u": true, "--user": true, "--entrypoint": true, "-l": true, "--label": true,
	"--platform": true, "--pull": true, "-m": true, "--memory": true, "--cpus": true, "-h": true,
	"--hostname": true, "--add-host": true, "--cap-add": true, "--cap-drop": true, "--device": true,
	"--security-opt": true, "--tmpfs": true, "--ulimit": true, "--restart": true, "--runtime": true,
}

// parseDockerRun reads what matters of `docker run [flags] IMAGE [args]`,
// best effort.
func parseDockerRun(args []string) dockerRun {
	var d dockerRun
	i := 0
	for i < len(args) && (args[i] == "run" || args[i] == "container") {
		i++
	}
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			d.image = a
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		if !hasVal && dockerValueFlags[name] && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch name {
		case "--network", "--net":
			d.noNetwork = val == "none"
		case "-v", "--volume":
			src, _, _ := strings.Cut(val, ":")
			d.volumes = append(d.volumes, src)
		case "--mount":
			for _, kv := range strings.Split(val, ",") {
				if k, v, ok := strings.Cut(kv, "="); ok && (k == "source" || k == "src") {
					d.volumes = append(d.volumes, v)
				}
			}
		}
	}
	return d
}
