// Package plan turns a request to run a server (mcpcage run's command line,
// or a client entry's, read by protect) into the cage's plan: what it runs,
// the host paths it sees and how, the sockets masked, the environment, the
// known servers' stores, the egress policy, the runtime, and the notes a
// person should read. `mcpcage run`, protect --fix's notes, protect's reach
// report and protect --inspect all call Make: what protect reports is what
// run does.
package plan

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/known"
)

// EnvEgressNetwork names the engine network the egress gateway reaches
// hosts through when --egress-network is not given.
const EnvEgressNetwork = "MCPCAGE_EGRESS_NETWORK"

// Request is what a run is asked: mcpcage run's flags and command.
type Request struct {
	Command       []string // the server's command line (npx/uvx, a program), or the image's arguments
	Image         string
	Name          string
	AllowNet      bool
	AllowHosts    []string
	AllowPrivate  bool
	EgressNetwork string
	Mounts        []string // --mount specs
	Env           []string // names
	Memory        string
	Pids          int64
	CPUs          float64
	TmpSize       string
	MaxLine       string
	StartTimeout  time.Duration
	Runtime       string
	Stdio         string // --stdio: auto, pipes or attach ("": MCPCAGE_STDIO, else auto)
	// URL is a remote server's address (run --url), Headers the --header
	// values ("Name: value", ${VAR} filled in from LookupEnv).
	URL     string
	Headers []string
	// ListOnly plans a session that only lists (scan, protect --inspect,
	// protect's report): a --env path that does not exist yet is not
	// refused.
	ListOnly bool
	// LookupEnv reads the variables --env names (nil: this process's).
	LookupEnv func(string) (string, bool)
	// UserHome and Dir are what "~/x" and "." (and "../x") in the
	// arguments are read against: the user's home and the folder the
	// client starts the server in.
	UserHome, Dir string
}

// Plan is the cage a Request gets.
type Plan struct {
	Cmd     launch.Command
	Name    string
	Mounts  []cage.Mount
	Env     []string // NAME=VALUE
	Memory  int64
	TmpSize int64
	MaxLine int
	// StateDir is $MCPCAGE_HOME.
	StateDir string
	// Sockets are the socket folders of the host (cage.SocketDirs) to mask
	// wherever a mount shows them: those no --mount names.
	Sockets []string
	Notes   []string       // warnings for a person, one line each
	WorkDir string         // the client's working directory when the cage shows it, else ""
	Prog    launch.Program // for a local program: what runs
	// Egress is the --allow-host policy (nil: none), EgressNet the engine
	// network its gateway reaches hosts through.
	Egress    *egress.Policy
	EgressNet string
	Runtime   string // the OCI runtime ("" for the engine's default)
	Stdio     string // how the server's stdio travels (cage.StdioAuto, StdioPipes, StdioAttach)
	// AllowNet gives the cage the engine's bridge, fully open; AllowHosts
	// are the --allow-host hosts as written.
	AllowNet   bool
	AllowHosts []string
	// Remote, when not nil, is a remote server's session: no cage.
	Remote *Remote
}

// parseMaxLine reads --max-line.
func parseMaxLine(s string) (int, error) {
	ml, err := cage.ParseSize(s)
	if err != nil || ml < 4<<10 || ml > 1<<30 {
		return 0, usage(fmt.Errorf("--max-line %q: give a size between 4k and 1g, like 16m", s))
	}
	return int(ml), nil
}

// UsageError is a request refused: the command line must change. Fix says how.
type UsageError struct {
	Err error
	Fix string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Hint says what to do.
func (e *UsageError) Hint() string { return e.Fix }

// usage refuses the request with err (whose own hint, if any, stays).
func usage(err error) error {
	if u, ok := err.(*UsageError); ok {
		return u
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return &UsageError{Err: err, Fix: h.Hint()}
	}
	return &UsageError{Err: err}
}

// usageHint refuses the request with err and what to do.
func usageHint(err error, format string, args ...any) error {
	return &UsageError{Err: err, Fix: fmt.Sprintf(format, args...)}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func Make(req Request) (*Plan, error) {
	p := &Plan{}
	if req.URL != "" {
		if err := makeRemote(req, p); err != nil {
			return nil, err
		}
		var err error
		if p.StateDir, err = home.Dir(); err != nil {
			return nil, err
		}
		return p, nil
	}
	if req.Image != "" {
		if strings.HasPrefix(req.Image, "-") {
			return nil, usage(&launch.UsageError{Msg: fmt.Sprintf("--image %q is not an image name", req.Image), Fix: "write --image IMAGE -- ARGS"})
		}
		p.Cmd = launch.Command{Kind: "image", Image: req.Image, Args: req.Command}
	} else {
		c, err := launch.ParseCommand(req.Command)
		if err != nil {
			return nil, usage(err)
		}
		p.Cmd = c
	}
	p.Name = req.Name
	if p.Name == "" {
		p.Name = p.Cmd.Name()
	}
	if err := launch.ValidName(p.Name); err != nil {
		return nil, usage(err)
	}
	// Clients pass "~/x" and "." as written: the server would read them
	// against its private HOME and working directory. They mean the user's
	// home and the folder the client started mcpcage in.
	userHome, cwd := req.UserHome, req.Dir
	p.Cmd.Args, _ = launch.ExpandArgs(p.Cmd.Args, userHome, cwd)
	if p.Cmd.Kind == "exec" {
		prog, err := launch.FindProgram(p.Cmd.Program, userHome, cwd)
		if err != nil {
			return nil, usageHint(err, "mcpcage runs compiled programs (static or linked against glibc), npx and uvx packages, and images (--image)")
		}
		p.Prog = prog
	}
	var envPaths []string
	var envNames map[string]string // a path -> the variable that names it
	var err error
	if p.Memory, err = cage.ParseSize(req.Memory); err != nil || p.Memory < 16<<20 {
		return nil, usage(fmt.Errorf("--memory %q: give a size of at least 16m, like 512m or 1g", req.Memory))
	}
	if p.TmpSize, err = cage.ParseSize(req.TmpSize); err != nil || p.TmpSize < 1<<20 {
		return nil, usage(fmt.Errorf("--tmp-size %q: give a size of at least 1m, like 64m", req.TmpSize))
	}
	if p.MaxLine, err = parseMaxLine(req.MaxLine); err != nil {
		return nil, err
	}
	if req.Pids < 16 {
		return nil, usage(fmt.Errorf("--pids %d: give at least 16", req.Pids))
	}
	if req.CPUs <= 0 || req.CPUs > 1024 {
		return nil, usage(fmt.Errorf("--cpus %g: give a positive number, like 1 or 0.5", req.CPUs))
	}
	if req.StartTimeout <= 0 {
		return nil, usage(fmt.Errorf("--start-timeout %s: give a positive duration, like 30s", req.StartTimeout))
	}
	lookupEnv := req.LookupEnv
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	for _, n := range req.Env {
		if strings.Contains(n, "=") {
			// Said without echoing the value: it may be a secret.
			return nil, usageHint(fmt.Errorf("--env takes a variable's name, not NAME=VALUE"),
				"put the value in mcpcage's environment (the client config's env block) and write --env NAME")
		}
		if !envName.MatchString(n) {
			return nil, usage(fmt.Errorf("--env %q is not a variable name", n))
		}
		v, ok := lookupEnv(n)
		if !ok {
			return nil, usageHint(fmt.Errorf("--env %s: %s is not set in mcpcage's environment", n, n),
				"set it in the client config's env block for this server")
		}
		if x, ok := launch.ExpandPath(v, userHome, cwd); ok {
			v = x
		}
		if filepath.IsAbs(v) && !strings.ContainsRune(v, 0) {
			envPaths = append(envPaths, v)
			if envNames == nil {
				envNames = map[string]string{}
			}
			envNames[filepath.Clean(v)] = n
		}
		p.Env = append(p.Env, n+"="+v)
	}
	// A well-known server's store goes to its private HOME unless its
	// variable is passed: by default some keep it next to their code,
	// which is read-only in the cage (server-memory: every write failed).
	if k, ok := known.Lookup(p.Cmd.Kind, p.Cmd.Package); ok {
		for _, st := range k.State {
			if !slices.Contains(req.Env, st.Env) {
				p.Env = append(p.Env, st.Env+"="+path.Join(cage.HomeInContainer, st.Default))
			}
		}
	}
	if p.StateDir, err = home.Dir(); err != nil {
		return nil, err
	}
	for _, spec := range req.Mounts {
		target, rw, err := cage.ParseMountSpec(spec)
		if err != nil {
			return nil, usage(err)
		}
		m, err := cage.ResolveMount(target, rw, p.StateDir)
		if err != nil {
			return nil, usage(err)
		}
		p.Mounts = append(p.Mounts, m)
	}
	sockDirs := cage.SocketDirs()
	for _, d := range sockDirs {
		named := false
		for _, m := range p.Mounts {
			named = named || cage.SocketDirOf(m.Source, []string{d}) != ""
		}
		if !named {
			p.Sockets = append(p.Sockets, d)
		}
	}
	// The existing paths among the server's arguments, then among the
	// values of the variables passed (a store, a config file), are shown
	// read-only unless a --mount already covers them.
	for _, src := range []struct {
		paths []string
		what  string
	}{{launch.ArgPaths(p.Cmd.Args), "the server's arguments name"}, {launch.ArgPaths(envPaths), "a variable passed with --env names"}} {
		for _, a := range src.paths {
			if cage.Covered(p.Mounts, a) {
				continue
			}
			m, err := cage.ResolveMount(a, false, p.StateDir)
			if err != nil {
				return nil, usageHint(err, "%s this path, so mcpcage would mount it; give another path", src.what)
			}
			if d := cage.SocketDirOf(m.Source, p.Sockets); d != "" {
				// Naming a path is not consent to show the sockets of the
				// user's daemons (tmux, ssh-agent, D-Bus): only --mount is.
				p.Notes = append(p.Notes, fmt.Sprintf("not mounting %s, %s it: %s holds sockets of programs on this machine (tmux, ssh-agent, D-Bus, ...); give --mount %s to show it", a, src.what, d, a))
				continue
			}
			p.Mounts = append(p.Mounts, m)
		}
	}
	// A variable that names a host path that does not exist yet (a store
	// the server will create: server-memory's MEMORY_FILE_PATH) would be
	// written inside the cage, where nobody sees it again: its own /tmp is
	// emptied at the end, the rest of its disk is read-only. Unless a
	// --mount shows the folder, the start is refused with what to do.
	for _, v := range envPaths {
		if req.ListOnly {
			break
		}
		if err := envPathMissing(envNames[filepath.Clean(v)], v, p.Mounts); err != nil {
			return nil, usage(err)
		}
	}
	// Project servers read their configuration from the folder the client
	// starts them in: when the cage shows that folder, start there.
	if cwd != "" && cage.Covered(p.Mounts, cwd) {
		p.WorkDir = cwd
	}
	if err := planEgress(req, p); err != nil {
		return nil, err
	}
	p.AllowNet, p.AllowHosts = req.AllowNet, req.AllowHosts
	p.Stdio = req.Stdio
	if p.Stdio == "" {
		p.Stdio = os.Getenv(cage.EnvStdio)
	}
	switch p.Stdio {
	case "", cage.StdioAuto, cage.StdioPipes, cage.StdioAttach:
	default:
		return nil, usageHint(fmt.Errorf("--stdio %q is not a way", p.Stdio), "write --stdio auto, pipes or attach (or leave it out)")
	}
	p.Runtime = req.Runtime
	if p.Runtime == "" {
		p.Runtime = os.Getenv(cage.EnvRuntime)
	}
	if p.Runtime != "" && !runtimeName.MatchString(p.Runtime) {
		return nil, usageHint(fmt.Errorf("--runtime %q is not a runtime name", p.Runtime), "write --runtime runsc, or the name the engine knows it by (docker info)")
	}
	return p, nil
}

// envPathMissing refuses a --env variable whose value is an absolute path
// that does not exist on the host while its folder does, and that no
// --mount covers: the server would create it inside the cage and lose it.
// A value whose folder does not exist either (or is "/": "/v1" is more
// often a URL's path than a file) is left alone.
func envPathMissing(name, v string, mounts []cage.Mount) error {
	v = filepath.Clean(v)
	if _, err := os.Lstat(v); err == nil || cage.Covered(mounts, v) {
		return nil
	}
	dir := filepath.Dir(v)
	if dir == "/" {
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	where := "inside the cage, where you never see it"
	for _, own := range []string{"/tmp", "/dev/shm"} {
		if dir == own || strings.HasPrefix(dir, own+"/") {
			where = "in the cage's own " + own + ", emptied when the session ends"
		}
	}
	return usageHint(fmt.Errorf("--env %s names %s, which does not exist yet: the server would create it %s", name, v, where),
		"give --mount %s:rw so the server keeps it in your folder, or point %s at a file that exists", dir, name)
}

// runtimeName is what an engine's runtime may be called.
var runtimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func planEgress(req Request, p *Plan) error {
	if len(req.AllowHosts) == 0 {
		if req.AllowPrivate {
			return usageHint(fmt.Errorf("--allow-private-addresses needs --allow-host"), "name the hosts with --allow-host HOST[:PORT]")
		}
		if req.EgressNetwork != "" {
			return usageHint(fmt.Errorf("--egress-network needs --allow-host"), "name the hosts with --allow-host HOST[:PORT]")
		}
		return nil
	}
	if req.AllowNet {
		return usageHint(fmt.Errorf("--allow-net and --allow-host do not go together: --allow-net opens everything"),
			"keep --allow-host to allow only the hosts the server needs")
	}
	pol, err := egress.ParsePolicy(req.AllowHosts, req.AllowPrivate)
	if err != nil {
		return usageHint(err, "write --allow-host api.example.com, api.example.com:8443 or *.example.com")
	}
	p.Egress = &pol
	p.EgressNet = req.EgressNetwork
	if p.EgressNet == "" {
		p.EgressNet = os.Getenv(EnvEgressNetwork)
	}
	return nil
}
