package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/untrusted"
	"github.com/mcpcage/mcpcage/known"
)

// Exit statuses of `mcpcage run` besides the server's own.
const (
	exitUsage     = 2   // the command line was refused
	exitCageError = 125 // the cage could not be set up (Docker, image, install)
)

// RunOptions are `mcpcage run`'s flags and arguments.
type RunOptions struct {
	IO           *IOStreams
	Command      []string // the server's command line (npx/uvx), or the image's arguments
	Image        string
	Name         string
	AllowNet     bool
	Mounts       []string
	Env          []string // names
	Memory       string
	Pids         int64
	CPUs         float64
	TmpSize      string
	MaxLine      string
	Update       bool
	AllowScripts bool
	AllowDeps    []string
	Runtime      string
	StartTimeout time.Duration
	Home         string // --home: the state directory, in place of $MCPCAGE_HOME
	Guard        GuardFlags
	// Egress by name (run_egress.go).
	AllowHosts    []string
	AllowPrivate  bool
	EgressNetwork string
	// Set by protect --inspect only, never by a flag: LookupEnv is where
	// --env values come from (nil: mcpcage's own environment), and
	// ListOnly is a start that only lists the server's tools (scan,
	// protect --inspect): what it writes is not meant to be kept, so a
	// variable naming a file it would create is not refused.
	ListOnly bool
	// ScratchHome gives the server an empty HOME in memory in place of its
	// private folder.
	LookupEnv   func(string) (string, bool)
	ScratchHome bool
}

func newRunCmd(io *IOStreams) *cobra.Command {
	opts := &RunOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "run [flags] [--] npx -y PACKAGE [ARGS...] | uvx PACKAGE [ARGS...] | --image IMAGE [-- ARGS...]",
		Short: "Run an MCP server in a cage, behind the proxy",
		Long: `Run an MCP server in a Docker container with no network, a read-only disk
and no access to your home directory, and relay its stdio through the proxy
(pins, scanning, audit).

Prefix the command your client runs:

  mcpcage run -- npx -y @modelcontextprotocol/server-filesystem ~/projects
  mcpcage run uvx mcp-server-time
  mcpcage run --image ghcr.io/example/server:1 -- --stdio

npx -p PKG CMD and uvx --from PKG CMD run the package's command CMD; a
compiled local program (static or glibc-linked) runs in the base image with
the binary mounted read-only; scripts run by an interpreter are refused.

Existing absolute paths among the server's arguments (and "~/x", ".", "../x",
read against your home and the directory mcpcage was started in) are
mounted read-only at the same path; --mount adds others. Environment variables reach the server only
when named with --env (the value is taken from mcpcage's own environment).

Exit status: the server's own status when it ends the session by itself; 0
when the client ends it; 2 for a command line that was refused; 125 when the
cage could not be set up (Docker unreachable, image missing, package not found,
install failed); 130/143/129 when SIGINT/SIGTERM/SIGHUP stopped it; 137 when
the server was killed for using too much memory.`,
		Example: `  mcpcage run -- npx -y @modelcontextprotocol/server-everything
  mcpcage run --mount ~/notes:rw -- npx -y @modelcontextprotocol/server-filesystem ~/notes ~/docs
  GITHUB_TOKEN=... mcpcage run --allow-net --env GITHUB_TOKEN -- npx -y @modelcontextprotocol/server-github`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			if err := useHome(opts.Home); err != nil {
				return usageErr(err)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runRun(ctx, opts)
		},
	}
	fs := cmd.Flags()
	// Everything after the server's command is the server's.
	fs.SetInterspersed(false)
	fs.StringVar(&opts.Image, "image", "", "run a server that ships as a Docker `image` (its entrypoint; arguments after --)")
	fs.StringVar(&opts.Name, "name", "", "the server's `name` for pins, audit and its private HOME (default: from the package or image)")
	fs.BoolVar(&opts.AllowNet, "allow-net", false, "give the server the network, fully open")
	fs.StringArrayVar(&opts.AllowHosts, "allow-host", nil, "let the server reach `HOST[:PORT]` only (port 443 by default; *.example.com for its subdomains; repeatable)")
	fs.BoolVar(&opts.AllowPrivate, "allow-private-addresses", false, "let allowed hosts resolve to private, loopback and link-local addresses")
	fs.StringVar(&opts.EgressNetwork, "egress-network", "", "the Docker `network` the egress gateway reaches hosts through (default $"+EnvEgressNetwork+", else the default bridge)")
	fs.StringArrayVar(&opts.Mounts, "mount", nil, "show a host folder at the same `path`, read-only; PATH:rw for read-write (repeatable)")
	fs.StringArrayVar(&opts.Env, "env", nil, "pass the environment variable `NAME` (its value from mcpcage's environment; repeatable)")
	fs.StringVar(&opts.Memory, "memory", "512m", "memory limit (no swap)")
	fs.Int64Var(&opts.Pids, "pids", cage.DefaultPids, "limit on processes and threads")
	fs.Float64Var(&opts.CPUs, "cpus", cage.DefaultCPUs, "CPU limit")
	fs.StringVar(&opts.TmpSize, "tmp-size", "64m", "size of the server's /tmp")
	fs.StringVar(&opts.MaxLine, "max-line", "16m", "largest message accepted in either direction")
	fs.BoolVar(&opts.Update, "update", false, "resolve and install the package anew instead of the cached version")
	fs.BoolVar(&opts.AllowScripts, "allow-scripts", false, "run the package's install scripts (inside the install container)")
	fs.StringVar(&opts.Runtime, "runtime", "", "the engine's OCI `runtime` for the server's container, e.g. runsc (gVisor); default $"+cage.EnvRuntime+", else the engine's default")
	fs.StringArrayVar(&opts.AllowDeps, "allow-dependency", nil, "let the npm package `NAME` of the installed tree come from elsewhere than the registry (a tarball URL, git) or under another name (an alias) (repeatable)")
	fs.DurationVar(&opts.StartTimeout, "start-timeout", 30*time.Second, "how long to wait for the server's first answer before giving up")
	fs.StringVar(&opts.Home, "home", "", "mcpcage's state `directory` (pins, audit, packages), in place of $MCPCAGE_HOME; protect --fix writes it when yours is not ~/.mcpcage")
	opts.Guard.add(fs)
	return cmd
}

// useHome makes dir the state directory of this process. The state directory
// is read from MCPCAGE_HOME by every part (pins, audit, the package cache), so
// --home sets it there: a client that starts mcpcage with a stripped
// environment still reaches the state the user's own commands use.
func useHome(dir string) error {
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--home %q: give an absolute path (a client may start mcpcage in any directory)", dir)
	}
	return os.Setenv("MCPCAGE_HOME", filepath.Clean(dir))
}

// runPlan is everything `mcpcage run` decided from its command line, before
// touching Docker.
type runPlan struct {
	cmd      launch.Command
	name     string
	mounts   []cage.Mount
	env      []string // NAME=VALUE
	memory   int64
	tmpSize  int64
	maxLine  int
	stateDir string // $MCPCAGE_HOME
	// sockets are the socket folders of the host (cage.SocketDirs) to mask
	// wherever a mount shows them: those no --mount names.
	sockets []string
	notes   []string       // warnings for stderr, one line each
	workDir string         // the client's working directory when the cage shows it, else ""
	prog    launch.Program // for a local program: what runs
	// egress is the --allow-host policy (nil: none); egressRec turns its
	// gateway's events into audit records once upCage has started it.
	egress    *egress.Policy
	egressNet string
	runtime   string // the OCI runtime ("" for the engine's default)
	egressRec *guard.Egress
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func planRun(opts *RunOptions) (*runPlan, error) {
	p := &runPlan{}
	if opts.Image != "" {
		if strings.HasPrefix(opts.Image, "-") {
			return nil, usageErr(&launch.UsageError{Msg: fmt.Sprintf("--image %q is not an image name", opts.Image), Fix: "write --image IMAGE -- ARGS"})
		}
		p.cmd = launch.Command{Kind: "image", Image: opts.Image, Args: opts.Command}
	} else {
		c, err := launch.ParseCommand(opts.Command)
		if err != nil {
			return nil, usageErr(err)
		}
		p.cmd = c
	}
	p.name = opts.Name
	if p.name == "" {
		p.name = p.cmd.Name()
	}
	if err := launch.ValidName(p.name); err != nil {
		return nil, usageErr(err)
	}
	// Clients pass "~/x" and "." as written: the server would read them
	// against its private HOME and working directory. They mean the user's
	// home and the folder the client started mcpcage in.
	userHome, _ := home.User()
	cwd, _ := os.Getwd()
	p.cmd.Args, _ = launch.ExpandArgs(p.cmd.Args, userHome, cwd)
	if p.cmd.Kind == "exec" {
		prog, err := launch.FindProgram(p.cmd.Program, userHome, cwd)
		if err != nil {
			return nil, usageErr(withHint(err, "mcpcage runs compiled programs (static or linked against glibc), npx and uvx packages, and images (--image)"))
		}
		p.prog = prog
	}
	var envPaths []string
	var envNames map[string]string // a path -> the variable that names it
	var err error
	if p.memory, err = cage.ParseSize(opts.Memory); err != nil || p.memory < 16<<20 {
		return nil, usageErr(fmt.Errorf("--memory %q: give a size of at least 16m, like 512m or 1g", opts.Memory))
	}
	if p.tmpSize, err = cage.ParseSize(opts.TmpSize); err != nil || p.tmpSize < 1<<20 {
		return nil, usageErr(fmt.Errorf("--tmp-size %q: give a size of at least 1m, like 64m", opts.TmpSize))
	}
	ml, err := cage.ParseSize(opts.MaxLine)
	if err != nil || ml < 4<<10 || ml > 1<<30 {
		return nil, usageErr(fmt.Errorf("--max-line %q: give a size between 4k and 1g, like 16m", opts.MaxLine))
	}
	p.maxLine = int(ml)
	if opts.Pids < 16 {
		return nil, usageErr(fmt.Errorf("--pids %d: give at least 16", opts.Pids))
	}
	if opts.CPUs <= 0 || opts.CPUs > 1024 {
		return nil, usageErr(fmt.Errorf("--cpus %g: give a positive number, like 1 or 0.5", opts.CPUs))
	}
	if opts.StartTimeout <= 0 {
		return nil, usageErr(fmt.Errorf("--start-timeout %s: give a positive duration, like 30s", opts.StartTimeout))
	}
	lookupEnv := opts.LookupEnv
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	for _, n := range opts.Env {
		if strings.Contains(n, "=") {
			// Said without echoing the value: it may be a secret.
			return nil, usageErr(withHint(fmt.Errorf("--env takes a variable's name, not NAME=VALUE"),
				"put the value in mcpcage's environment (the client config's env block) and write --env NAME"))
		}
		if !envName.MatchString(n) {
			return nil, usageErr(fmt.Errorf("--env %q is not a variable name", n))
		}
		v, ok := lookupEnv(n)
		if !ok {
			return nil, usageErr(withHint(fmt.Errorf("--env %s: %s is not set in mcpcage's environment", n, n),
				"set it in the client config's env block for this server"))
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
		p.env = append(p.env, n+"="+v)
	}
	// A well-known server's store goes to its private HOME unless its
	// variable is passed: by default some keep it next to their code,
	// which is read-only in the cage (server-memory: every write failed).
	if k, ok := known.Lookup(p.cmd.Kind, p.cmd.Package); ok {
		for _, st := range k.State {
			if !slices.Contains(opts.Env, st.Env) {
				p.env = append(p.env, st.Env+"="+path.Join(cage.HomeInContainer, st.Default))
			}
		}
	}
	if p.stateDir, err = home.Dir(); err != nil {
		return nil, err
	}
	for _, spec := range opts.Mounts {
		target, rw, err := cage.ParseMountSpec(spec)
		if err != nil {
			return nil, usageErr(err)
		}
		m, err := cage.ResolveMount(target, rw, p.stateDir)
		if err != nil {
			return nil, usageErr(err)
		}
		p.mounts = append(p.mounts, m)
	}
	sockDirs := cage.SocketDirs()
	for _, d := range sockDirs {
		named := false
		for _, m := range p.mounts {
			named = named || cage.SocketDirOf(m.Source, []string{d}) != ""
		}
		if !named {
			p.sockets = append(p.sockets, d)
		}
	}
	// The existing paths among the server's arguments, then among the
	// values of the variables passed (a store, a config file), are shown
	// read-only unless a --mount already covers them.
	for _, src := range []struct {
		paths []string
		what  string
	}{{launch.ArgPaths(p.cmd.Args), "the server's arguments name"}, {launch.ArgPaths(envPaths), "a variable passed with --env names"}} {
		for _, a := range src.paths {
			if cage.Covered(p.mounts, a) {
				continue
			}
			m, err := cage.ResolveMount(a, false, p.stateDir)
			if err != nil {
				return nil, usageErr(withHint(err, "%s this path, so mcpcage would mount it; give another path", src.what))
			}
			if d := cage.SocketDirOf(m.Source, p.sockets); d != "" {
				// Naming a path is not consent to show the sockets of the
				// user's daemons (tmux, ssh-agent, D-Bus): only --mount is.
				p.notes = append(p.notes, fmt.Sprintf("not mounting %s, %s it: %s holds sockets of programs on this machine (tmux, ssh-agent, D-Bus, ...); give --mount %s to show it", a, src.what, d, a))
				continue
			}
			p.mounts = append(p.mounts, m)
		}
	}
	// A variable that names a host path that does not exist yet (a store
	// the server will create: server-memory's MEMORY_FILE_PATH) would be
	// written inside the cage, where nobody sees it again: its own /tmp is
	// emptied at the end, the rest of its disk is read-only. Unless a
	// --mount shows the folder, the start is refused with what to do.
	for _, v := range envPaths {
		if opts.ListOnly {
			break
		}
		if err := envPathMissing(envNames[filepath.Clean(v)], v, p.mounts); err != nil {
			return nil, usageErr(err)
		}
	}
	// Project servers read their configuration from the folder the client
	// starts them in: when the cage shows that folder, start there.
	if cwd != "" && cage.Covered(p.mounts, cwd) {
		p.workDir = cwd
	}
	if err := planEgress(opts, p); err != nil {
		return nil, err
	}
	p.runtime = opts.Runtime
	if p.runtime == "" {
		p.runtime = os.Getenv(cage.EnvRuntime)
	}
	if p.runtime != "" && !runtimeName.MatchString(p.runtime) {
		return nil, usageErr(withHint(fmt.Errorf("--runtime %q is not a runtime name", p.runtime), "write --runtime runsc, or the name the engine knows it by (docker info)"))
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
	return withHint(fmt.Errorf("--env %s names %s, which does not exist yet: the server would create it %s", name, v, where),
		"give --mount %s:rw so the server keeps it in your folder, or point %s at a file that exists", dir, name)
}

// runtimeName is what an engine's runtime may be called.
var runtimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// handBanner tells a person who started `mcpcage run` on a terminal what
// it runs and that it now waits for an MCP client on stdin: without it the
// terminal shows nothing at all. A client's stdin is never a terminal.
func handBanner(io *IOStreams, name string, command []string, image string) {
	if !io.InTTY || !io.ErrTTY {
		return
	}
	what := strings.Join(command, " ")
	if image != "" {
		what = "image " + image
	}
	untrusted.Fprintf(io.ErrOut, "mcpcage: running %q (%s) in a cage; it speaks MCP on stdin/stdout and waits for a client: put this command in your client's config, or type JSON-RPC lines here (Ctrl-C stops)\n", name, what)
}

// dockerHint adds to an error of cage.Connect the hint for its cause.
func dockerHint(err error) error {
	return withHint(err, "%s", cage.ConnectHint(err))
}

// connectEngine is cage.Connect for a command that lists or builds: an
// engine that cannot be reached is exit status 1 with the hint for its cause.
func connectEngine(ctx context.Context) (cage.Engine, error) {
	cli, err := cage.Connect(ctx)
	if err != nil {
		return nil, &ExitError{Code: 1, Err: dockerHint(err)}
	}
	return cli, nil
}

func usageErr(err error) error {
	return &ExitError{Code: exitUsage, Err: err}
}

// stopSignal is the cause of a run's context when a signal ended it: the
// person (or the client, or the system) stopped the session, which is
// neither the server's doing nor an out-of-memory kill.
type stopSignal struct{ sig syscall.Signal }

func (e *stopSignal) Error() string { return "mcpcage received " + signalName(e.sig) }

// code is the shell's status for death by that signal (130 for SIGINT).
func (e *stopSignal) code() int { return 128 + int(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// signalContext is cancelled, with a *stopSignal cause, at SIGINT, SIGTERM
// or SIGHUP.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigc:
			if ss, ok := s.(syscall.Signal); ok {
				cancel(&stopSignal{sig: ss})
			} else {
				cancel(nil)
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigc)
		close(done)
		cancel(nil)
	}
}

// stoppedBy returns the signal that ended ctx, or nil.
func stoppedBy(ctx context.Context) *stopSignal {
	var ss *stopSignal
	if errors.As(context.Cause(ctx), &ss) {
		return ss
	}
	return nil
}

// signalledCage is the cage as the proxy sees it: a server that was stopped
// because mcpcage received a signal says so to the client left waiting.
type signalledCage struct {
	*cage.Started
	ctx context.Context
}

func (c signalledCage) ExitReason() string {
	if ss := stoppedBy(c.ctx); ss != nil && !c.OOMKilled() {
		return "stopped because " + ss.Error() + " (the session was ended by the user)"
	}
	return c.Cage.ExitReason()
}

// sessionGCPercent is the collector's target for a session's process, unless
// GOGC says otherwise. A session keeps about 4 MB live (the rules' automaton
// is outside the collected heap) and allocates in proportion to what it
// relays; Go's default lets the heap grow to twice what is live between
// collections, and the pages it took stay in the resident set. At 50, a
// burst of 300 calls of 64 KiB each way peaked at 27.6-27.8 MB against
// 29.9-30.4 MB, for 8-10 % more CPU (BenchmarkCageRSS, docs/proxy.md).
const sessionGCPercent = 50

// tuneSessionGC sets sessionGCPercent, unless the user set GOGC.
func tuneSessionGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(sessionGCPercent)
	}
}

func runRun(ctx context.Context, opts *RunOptions) error {
	tuneSessionGC()
	p, err := planRun(opts)
	if err != nil {
		answerWaitingClient(opts.IO, fmt.Sprintf("mcpcage could not start the server: %v", err))
		return err
	}
	for _, n := range p.notes {
		untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: warning: %s\n", n)
	}
	// The guard first: a session whose calls cannot be recorded never
	// starts its server, and what the cage reports while it starts goes
	// straight into the log.
	g, err := openGuard(ctx, opts, p)
	if err != nil {
		answerWaitingClient(opts.IO, fmt.Sprintf("mcpcage could not start the server: %v", err))
		return err
	}
	handBanner(opts.IO, p.name, opts.Command, opts.Image)
	st, err := upCage(ctx, opts, p, g)
	if err != nil {
		g.Abort()
		answerWaitingClient(opts.IO, fmt.Sprintf("mcpcage could not start %q: %v", p.name, err))
		return err
	}
	code, err := serveSession(ctx, opts.IO, g, signalledCage{Started: st, ctx: ctx}, p.maxLine, opts.StartTimeout)
	return runExit(ctx, opts, p, st.Cage, code, err)
}

// openGuard opens the session's guard (its audit log) from the flags.
func openGuard(ctx context.Context, opts *RunOptions, p *runPlan) (*guard.Guard, error) {
	gc, err := opts.Guard.config(opts.IO, p.name, launch.Launch{}, p.stateDir)
	if err != nil {
		return nil, err
	}
	gc.Env = opts.Env
	gc.StartTimeout, gc.AllowNet = opts.StartTimeout, opts.AllowNet || p.egress != nil
	// The proxy reads a blocking os.Stdin through a non-blocking duplicate,
	// so a signal ends its read too (proxy.Run).
	gc.Stopped = func() (string, int) {
		if ss := stoppedBy(ctx); ss != nil {
			return signalName(ss.sig), int(ss.sig)
		}
		return "", 0
	}
	g, err := guard.Open(gc)
	if err != nil {
		return nil, &ExitError{Code: exitCageError, Err: err}
	}
	return g, nil
}

// runExit is the exit of a session that ran: the server's status, or why
// mcpcage ended it.
func runExit(ctx context.Context, opts *RunOptions, p *runPlan, c *cage.Cage, code int, err error) error {
	if c.OOMKilled() {
		return &ExitError{Code: 137, Err: withHint(fmt.Errorf("%q was killed for using more than its memory limit (%s)", p.name, cage.FormatSize(p.memory)),
			"raise the limit with --memory, e.g. --memory 1g")}
	}
	if err != nil {
		// A policy that could not be set up, or a cage that could not be
		// removed: the session did not end cleanly.
		if code == 0 {
			code = 1
		}
		return &ExitError{Code: code, Err: err}
	}
	if ss := stoppedBy(ctx); ss != nil {
		fmt.Fprintf(opts.IO.ErrOut, "mcpcage: %q stopped: %s (the session was ended by the user)\n", p.name, ss)
		return &ExitError{Code: ss.code()}
	}
	if c.Killed() || ctx.Err() != nil {
		// mcpcage ended the server (the client left and it did not exit
		// in time, or a signal, or its gateway ended): its status is not
		// the server's doing.
		return nil
	}
	if code != 0 {
		return &ExitError{Code: code, Err: fmt.Errorf("%q exited with status %d", p.name, code)}
	}
	return nil
}

// upCage starts the session's cage (cage.Up) as p says; g, when not nil,
// hears what runs and the egress gateway's events.
func upCage(ctx context.Context, opts *RunOptions, p *runPlan, g *guard.Guard) (*cage.Started, error) {
	// A HOME made before identities were recorded belongs to the launch
	// its pins approved.
	var legacyOwner string
	if f, err := guard.PinStore(p.stateDir).Load(p.name); err == nil && f.Approved != nil && f.Approved.Launch.Kind != "" {
		legacyOwner = f.Approved.Launch.Identity()
	}
	plan := cage.Plan{
		Name: p.name, Command: p.cmd, Program: p.prog, Mounts: p.mounts,
		StateDir: p.stateDir, Sockets: p.sockets, Env: p.env, WorkDir: p.workDir,
		AllowNet: opts.AllowNet, Memory: p.memory, Pids: opts.Pids, CPUs: opts.CPUs, TmpSize: p.tmpSize,
		Update: opts.Update, AllowScripts: opts.AllowScripts, AllowDeps: opts.AllowDeps, LegacyOwner: legacyOwner, Runtime: p.runtime,
		Egress: p.egress, EgressNetwork: p.egressNet, Log: opts.IO.ErrOut, Progress: opts.IO.Reporter(), ScratchHome: opts.ScratchHome,
	}
	switch {
	case g != nil:
		plan.Launched = g.Launched
		if p.egress != nil {
			plan.EgressSink = g.Egress()
		}
	case p.egress != nil:
		// No session (an inspection): the refusals are kept, not recorded.
		p.egressRec = guard.NewEgress(p.name, opts.IO.ErrOut, nil)
		plan.EgressSink = p.egressRec
	}
	st, err := cage.Up(ctx, plan)
	if err != nil {
		code := exitCageError
		var ae *cage.AccessError
		if errors.As(err, &ae) {
			// A mount the cage's user cannot use: the command line's to fix.
			code = exitUsage
		}
		return nil, &ExitError{Code: code, Err: err}
	}
	return st, nil
}

// answerWaitingClient answers the requests a client sent while mcpcage was
// failing to start, so that no client hangs on a server that will never
// come: each request that arrives within a short while gets msg as a
// JSON-RPC error. A terminal on stdin is a person, not a client.
func answerWaitingClient(io *IOStreams, msg string) {
	if io.InTTY || io.In == nil {
		return
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		rd := jsonrpc.NewReader(io.In, jsonrpc.DefaultMaxLine)
		for {
			line, err := rd.ReadLine()
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	w := jsonrpc.NewWriter(io.Out)
	wait := 2 * time.Second // for the first message: the client may still be starting
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return
			}
			if m, err := jsonrpc.Parse(line); err == nil && m.Kind == jsonrpc.KindRequest {
				_ = w.WriteMessage(jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeInternalError, msg, nil))
			}
			wait = 300 * time.Millisecond
		case <-time.After(wait):
			return
		}
	}
}
