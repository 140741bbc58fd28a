package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/oauth"
	"github.com/mcpcage/mcpcage/internal/plan"
	"github.com/mcpcage/mcpcage/internal/remote"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Exit statuses of `mcpcage run` besides the server's own.
const (
	exitUsage     = 2   // the command line was refused
	exitCageError = 125 // the cage could not be set up (Docker, image, install)
)

// RunOptions are `mcpcage run`'s flags and arguments.
type RunOptions struct {
	// Request is what the flags ask of the session's plan (plan.Make);
	// its LookupEnv and ListOnly are set by protect --inspect and scan
	// only, never by a flag.
	plan.Request
	IO           *IOStreams
	Update       bool
	AllowScripts bool
	AllowDeps    []string
	Home         string // --home: the state directory, in place of $MCPCAGE_HOME
	Guard        GuardFlags
	// ScratchHome gives the server an empty HOME in memory in place of its
	// private folder.
	ScratchHome bool
	// ClientID is a remote server's OAuth client id (--client-id).
	ClientID string
}

func newRunCmd(io *IOStreams) *cobra.Command { return runCommand(&RunOptions{IO: io}) }

// parseRunArgs reads a `mcpcage run` command line (what follows "run") with
// run's own flags, as run would.
func parseRunArgs(argv []string, io *IOStreams) (*RunOptions, error) {
	opts := &RunOptions{IO: io}
	fs := runCommand(opts).Flags()
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	opts.Command = fs.Args()
	return opts, nil
}

// runCommand is `mcpcage run`, its flags read into opts.
func runCommand(opts *RunOptions) *cobra.Command {
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
	fs.StringVar(&opts.URL, "url", "", "bridge to a remote MCP server at this `URL` (Streamable HTTP, or HTTP+SSE) under the same guard, with no cage; ${VAR} in its path or query is read from the environment")
	fs.StringVar(&opts.ClientID, "client-id", "", "with --url: the OAuth client `id` the server's authorization server issued you (default: mcpcage registers itself)")
	fs.StringArrayVar(&opts.Headers, "header", nil, "send this header to the --url server only: `'Name: value'`, a secret as 'Authorization: Bearer ${TOKEN}' (read from the environment; repeatable)")
	fs.StringVar(&opts.Image, "image", "", "run a server that ships as a Docker `image` (its entrypoint; arguments after --)")
	fs.StringVar(&opts.Name, "name", "", "the server's `name` for pins, audit and its private HOME (default: from the package or image)")
	fs.BoolVar(&opts.AllowNet, "allow-net", false, "give the server the network, fully open")
	fs.StringArrayVar(&opts.AllowHosts, "allow-host", nil, "let the server reach `HOST[:PORT]` only (port 443 by default; *.example.com for its subdomains; repeatable)")
	fs.BoolVar(&opts.AllowPrivate, "allow-private-addresses", false, "let allowed hosts resolve to private, loopback and link-local addresses")
	fs.StringVar(&opts.EgressNetwork, "egress-network", "", "the Docker `network` the egress gateway reaches hosts through (default $"+plan.EnvEgressNetwork+", else the default bridge)")
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
	fs.StringVar(&opts.Stdio, "stdio", "", "how the server's stdin and stdout travel: auto (named pipes where the engine shares them, else the engine's attach stream), pipes or attach; default $"+cage.EnvStdio+", else auto")
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

// runPlan is the plan of the session (plan.Make) and, once the cage is up,
// the recorder of its egress gateway's events.
type runPlan struct {
	*plan.Plan
	egressRec *guard.Egress
}

// request is the run asked by the command line, read against this user's
// home and the folder mcpcage was started in.
func (opts *RunOptions) request() plan.Request {
	req := opts.Request
	req.UserHome, _ = home.User()
	req.Dir, _ = os.Getwd()
	return req
}

// planRun is plan.Make for the command line; a refused request is exit
// status 2.
func planRun(opts *RunOptions) (*runPlan, error) {
	p, err := plan.Make(opts.request())
	if err != nil {
		var u *plan.UsageError
		if errors.As(err, &u) {
			return nil, usageErr(err)
		}
		return nil, err
	}
	return &runPlan{Plan: p}, nil
}

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
		return notStarted(opts.IO, "the server", err)
	}
	for _, n := range p.Notes {
		untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: warning: %s\n", n)
	}
	// The guard first: a session whose calls cannot be recorded never
	// starts its server, and what the cage reports while it starts goes
	// straight into the log.
	g, err := openGuard(ctx, opts, p)
	if err != nil {
		return notStarted(opts.IO, "the server", err)
	}
	if p.Remote != nil {
		return runRemote(ctx, opts, p, g)
	}
	handBanner(opts.IO, p.Name, opts.Command, opts.Image)
	st, err := upCage(ctx, opts, p, g)
	if err != nil {
		g.Abort()
		return notStarted(opts.IO, strconv.Quote(p.Name), err)
	}
	code, err := serveSession(ctx, opts.IO, g, signalledCage{Started: st, ctx: ctx}, p.MaxLine, opts.StartTimeout)
	return runExit(ctx, opts, p, st.Cage, code, err)
}

// runRemote is a session with a remote server (run --url): the same guard,
// the remote transport in place of a cage.
func runRemote(ctx context.Context, opts *RunOptions, p *runPlan, g *guard.Guard) error {
	g.Launched(p.Remote.Launch())
	ro := remote.Options{URL: p.Remote.URL, Header: p.Remote.Header, MaxLine: p.MaxLine, UserAgent: "mcpcage/" + version}
	if p.Remote.Header.Get("Authorization") == "" {
		// OAuth, as the server asks: the stored token, else a login the
		// person finishes in a browser within the client's wait.
		// The login must end before the client's wait does, so that the
		// client hears why.
		wait := max(opts.StartTimeout*3/4, opts.StartTimeout-5*time.Second)
		flow, err := oauthFlow(p.Name, p.Remote.URL, opts.ClientID, opts.IO, wait)
		if err != nil {
			g.Abort()
			return notStarted(opts.IO, strconv.Quote(p.Name), err)
		}
		ro.Auth = &oauth.Authorizer{Flow: flow}
	}
	srv, err := remote.Dial(ro)
	if err != nil {
		g.Abort()
		return notStarted(opts.IO, strconv.Quote(p.Name), err)
	}
	code, err := serveSession(ctx, opts.IO, g, srv, p.MaxLine, opts.StartTimeout)
	exit, _ := sessionEnded(ctx, opts, p, code, err)
	return exit
}

// notStarted answers a client that already sent its first request, and
// returns err.
func notStarted(io *IOStreams, what string, err error) error {
	answerWaitingClient(io, fmt.Sprintf("mcpcage could not start %s: %v", what, err))
	return err
}

// openGuard opens the session's guard (its audit log) from the flags.
func openGuard(ctx context.Context, opts *RunOptions, p *runPlan) (*guard.Guard, error) {
	gc, err := opts.Guard.config(opts.IO, p.Name, launch.Launch{}, p.StateDir)
	if err != nil {
		return nil, err
	}
	gc.Env = opts.Env
	// A remote server has the network: a silence is not for want of it.
	gc.StartTimeout, gc.AllowNet = opts.StartTimeout, opts.AllowNet || p.Egress != nil || p.Remote != nil
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

// sessionEnded is the exit of a session, caged or remote, that did not end
// cleanly (a policy that could not be set up, a cage that could not be
// removed) or that the user stopped with a signal; ended is false for
// neither.
func sessionEnded(ctx context.Context, opts *RunOptions, p *runPlan, code int, err error) (exit error, ended bool) {
	if err != nil {
		if code == 0 {
			code = 1
		}
		return &ExitError{Code: code, Err: err}, true
	}
	if ss := stoppedBy(ctx); ss != nil {
		fmt.Fprintf(opts.IO.ErrOut, "mcpcage: %q stopped: %s (the session was ended by the user)\n", p.Name, ss)
		return &ExitError{Code: ss.code()}, true
	}
	return nil, false
}

// runExit is the exit of a session that ran: the server's status, or why
// mcpcage ended it.
func runExit(ctx context.Context, opts *RunOptions, p *runPlan, c *cage.Cage, code int, err error) error {
	if c.OOMKilled() {
		return &ExitError{Code: 137, Err: withHint(fmt.Errorf("%q was killed for using more than its memory limit (%s)", p.Name, cage.FormatSize(p.Memory)),
			"raise the limit with --memory, e.g. --memory 1g")}
	}
	if exit, ended := sessionEnded(ctx, opts, p, code, err); ended {
		return exit
	}
	if c.Killed() || ctx.Err() != nil {
		// mcpcage ended the server (the client left and it did not exit
		// in time, or a signal, or its gateway ended): its status is not
		// the server's doing.
		return nil
	}
	if code != 0 {
		return &ExitError{Code: code, Err: fmt.Errorf("%q exited with status %d", p.Name, code)}
	}
	return nil
}

// upCage starts the session's cage (cage.Up) as p says; g, when not nil,
// hears what runs and the egress gateway's events.
func upCage(ctx context.Context, opts *RunOptions, p *runPlan, g *guard.Guard) (*cage.Started, error) {
	// A HOME made before identities were recorded belongs to the launch
	// its pins approved.
	var legacyOwner string
	if f, err := guard.PinStore(p.StateDir).Load(p.Name); err == nil && f.Approved != nil && f.Approved.Launch.Kind != "" {
		legacyOwner = f.Approved.Launch.Identity()
	}
	plan := cage.Plan{
		Name: p.Name, Command: p.Cmd, Program: p.Prog, Mounts: p.Mounts,
		StateDir: p.StateDir, Sockets: p.Sockets, Env: p.Env, WorkDir: p.WorkDir,
		AllowNet: opts.AllowNet, Memory: p.Memory, Pids: opts.Pids, CPUs: opts.CPUs, TmpSize: p.TmpSize,
		Update: opts.Update, AllowScripts: opts.AllowScripts, AllowDeps: opts.AllowDeps, LegacyOwner: legacyOwner, Runtime: p.Runtime, Stdio: p.Stdio,
		Egress: p.Egress, EgressNetwork: p.EgressNet, Log: opts.IO.ErrOut, Progress: opts.IO.Reporter(), ScratchHome: opts.ScratchHome,
	}
	switch {
	case g != nil:
		plan.Launched = g.Launched
		if p.Egress != nil {
			plan.EgressSink = g.Egress()
		}
	case p.Egress != nil:
		// No session (an inspection): the refusals are kept, not recorded.
		p.egressRec = guard.NewEgress(p.Name, opts.IO.ErrOut, nil)
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
