package cage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/go-units"

	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/harden"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/install"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/progress"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Plan is one session's cage as decided from the command line, before
// Docker is touched. Up carries it out.
type Plan struct {
	Name    string
	Command launch.Command
	Program launch.Program // for Command.Kind "exec": what runs
	Mounts  []Mount
	// StateDir is mcpcage's state directory, and Sockets the socket folders
	// of the host no --mount names: hidden wherever a mount shows them,
	// with the folders of Docker's sockets.
	StateDir string
	Sockets  []string
	Env      []string // NAME=VALUE
	WorkDir  string   // "": the server's HOME
	AllowNet bool
	Memory   int64
	Pids     int64
	CPUs     float64
	TmpSize  int64
	// Update, AllowScripts and AllowDeps are the install phase's
	// (install.Request).
	Update, AllowScripts bool
	AllowDeps            []string
	// LegacyOwner is the identity that owns a server HOME made before
	// identities were recorded (home.ServerHome).
	LegacyOwner string
	// Egress, when not nil, puts the cage behind an egress gateway that
	// reaches hosts through EgressNetwork ("": the default bridge) and
	// reports to EgressSink (each connection, each line of its output that
	// was not an event, the end of its events while the cage runs, after
	// which the cage is stopped: a session whose connections can no longer
	// be recorded does not go on).
	Egress        *egress.Policy
	EgressNetwork string
	EgressSink    EgressSink
	// Runtime is the engine's OCI runtime for the server's container
	// ("runsc": gVisor); "" for the engine's default. A runtime the engine
	// does not have is refused before anything starts.
	Runtime string
	// Stdio is how the server's stdin and stdout travel: StdioAuto ("")
	// named pipes where the engine shares them, else the attach stream;
	// StdioPipes or StdioAttach forces one (stdioWay).
	Stdio string
	// Launched, when set, hears what runs once the install phase knows
	// it, before the server starts (the audit's session_start).
	Launched func(launch.Launch)
	// Log receives what Up and the cage say on the way (orphans reaped,
	// warnings, hints, a failed install's output).
	Log io.Writer
	// Progress says what is slow as it happens: the first-use image, the
	// install phase. nil: nothing.
	Progress *progress.Reporter
	// ScratchHome gives the server an empty HOME in memory (Spec.ScratchHome)
	// in place of its private folder under StateDir (protect --inspect).
	ScratchHome bool
}

// Started is a running cage: the server, what was launched, and the egress
// gateway (nil without Plan.Egress), which the caller stops after the cage.
//
// It is the proxy's server (proxy.Server): its stdio and exit are the
// cage's, and stopping it stops the cage, then the gateway.
type Started struct {
	*Cage
	Launch  launch.Launch
	Gateway *Gateway
}

// EgressSink hears the egress gateway of a session (guard.Egress).
type EgressSink interface {
	Event(egress.Event)
	Lost()
	Ended(why string)
}

// Stop stops the cage, then its gateway.
func (s *Started) Stop(ctx context.Context) error {
	err := s.Cage.Stop(ctx)
	if s.Gateway != nil {
		if gerr := s.Gateway.Stop(ctx); err == nil {
			err = gerr
		}
	}
	return err
}

// UpError is a cage that could not be set up, with what to do about it.
type UpError struct {
	Err error
	Fix string // what to do; "" when Err says it (or has nothing to add)
}

func (e *UpError) Error() string { return e.Err.Error() }
func (e *UpError) Unwrap() error { return e.Err }

// Hint says what to do.
func (e *UpError) Hint() string { return e.Fix }

// ConnectHint is what to do about an error of Connect.
func ConnectHint(err error) string {
	var de *DockerError
	if errors.As(err, &de) {
		return de.Hint()
	}
	return "check that Docker runs (docker info), then try again"
}

// Up does everything between the command line and a running cage: Docker,
// orphan reaping, the image or the install phase (getting a missing cage
// image on first use), mounts, HOME, the egress gateway. Its errors are
// *UpError; one of a mount the cage's user cannot use wraps an *AccessError.
func Up(ctx context.Context, p Plan) (*Started, error) {
	log := p.Log
	if log == nil {
		log = io.Discard
	}
	var gw *Gateway
	var gwc chan error // the gateway's checks, beside the install
	fail := func(err error, hint string, args ...any) (*Started, error) {
		if gwc != nil {
			<-gwc
		}
		if gw != nil {
			_ = gw.Stop(ctx)
		}
		if hint != "" {
			hint = fmt.Sprintf(hint, args...)
		}
		return nil, &UpError{Err: err, Fix: hint}
	}
	cli, err := Connect(ctx)
	if err != nil {
		return fail(err, "%s", ConnectHint(err))
	}
	engine := harden.KindLater(ctx, cli)
	gvisor := false
	if p.Runtime != "" {
		if gvisor, err = CheckRuntime(ctx, cli, p.Runtime); err != nil {
			return fail(err, "%s", RuntimeHint(p.Runtime))
		}
	}
	way, why, err := stdioWay(p.Stdio, cli.DaemonHost(), gvisor, GatewayUsable())
	if err != nil {
		return fail(err, "leave --stdio out (auto), or give --stdio attach")
	}
	if way == StdioAttach && p.Progress != nil && p.Progress.Mode() == progress.Plain {
		untrusted.Fprintf(log, "mcpcage: the server's stdio goes through the engine's attach stream: %s\n", why)
	}
	// Orphans are removed beside the start (their removal can take
	// seconds), and said before Up returns.
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		if removed, err := Reap(ctx, cli); err != nil {
			untrusted.Fprintf(log, "mcpcage: warning: %v\n", err)
		} else if len(removed) > 0 {
			untrusted.Fprintf(log, "mcpcage: removed %d orphaned cage(s) whose mcpcage process is gone: %s\n", len(removed), strings.Join(removed, ", "))
		}
	}()
	defer func() { <-reaped }()
	if p.StateDir != "" {
		// The pipes of sessions that ended without their stop (SIGKILL).
		reapPipes(filepath.Join(p.StateDir, "egress"))
		reapPipes(filepath.Join(p.StateDir, "stdio"))
	}
	session := NewSession()
	// The cage, once started: the end of the gateway's events stops it.
	var started atomic.Pointer[Cage]
	if p.Egress != nil {
		// The pipes now; the gateway needs nothing of the image, the
		// install, HOME or the cage (whose shim waits for it), so it is
		// checked meanwhile, and its container starts once the cage has.
		spec := EgressSpec{Policy: *p.Egress, Upstream: p.EgressNetwork, Name: p.Name, Session: session, Dir: p.StateDir, Log: p.Log, Engine: engine}
		if p.EgressSink != nil {
			spec.Events, spec.Lost = p.EgressSink.Event, p.EgressSink.Lost
		}
		spec.Ended = func(why string) {
			if p.EgressSink != nil {
				p.EgressSink.Ended(why)
			}
			if cg := started.Load(); cg != nil {
				_ = cg.Stop(context.WithoutCancel(ctx))
			}
		}
		gw, err = NewGateway(spec)
		if err != nil {
			return fail(err, "")
		}
		gwc = make(chan error, 1)
		go func() { gwc <- gw.Start(ctx, cli) }()
	}
	spec := Spec{
		Runtime:  p.Runtime,
		GVisor:   gvisor,
		Session:  session,
		Name:     p.Name,
		Mounts:   p.Mounts,
		Masks:    MasksFor(p.Mounts, append(append([]string{p.StateDir}, DockerSocketDirs()...), p.Sockets...)...),
		Env:      p.Env,
		AllowNet: p.AllowNet,
		Memory:   p.Memory,
		Pids:     p.Pids,
		CPUs:     p.CPUs,
		TmpSize:  p.TmpSize,
		Log:      p.Log,
		Engine:   engine,
	}
	c := p.Command
	var l launch.Launch
	switch c.Kind {
	case "image":
		info, err := cli.ImageInspect(ctx, c.Image)
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				return fail(fmt.Errorf("image %s is not on this machine", c.Image), "docker pull %s (or docker load it), then try again", c.Image)
			}
			return fail(fmt.Errorf("cannot inspect image %s: %v", c.Image, err), "")
		}
		// The ID, not the name: what was inspected is what runs.
		spec.Image = info.ID
		spec.ImageName = c.Image
		spec.Cmd = c.Args
		l = launch.Launch{Kind: "image", Image: c.Image, ImageDigest: info.ID, Argv: c.Args}
	case "exec":
		// The base image for its C library and nothing of the user's but
		// the program itself, read-only at its own path (never copied: an
		// update of the program is what runs next, and its digest shows in
		// pins and audit).
		ref, id, err := install.ImageFor(ctx, cli, "npx")
		if err != nil {
			return fail(err, "run `sudo mcpcage images build node`, or pull the official image")
		}
		spec.Image, spec.ImageName = id, ref
		spec.Entrypoint = []string{p.Program.Path}
		spec.Cmd = c.Args
		spec.WorkingDir = HomeInContainer
		spec.Mounts = append([]Mount{{Source: p.Program.Path, Target: p.Program.Path}}, spec.Mounts...)
		l = launch.Launch{Kind: "exec", Package: p.Program.Path, Version: p.Program.Digest, Image: ref, ImageDigest: id, Argv: c.Args}
	default:
		req := install.Request{
			Kind: c.Kind, Spec: c.Spec, Bin: c.Bin, Update: p.Update, AllowScripts: p.AllowScripts, AllowDeps: p.AllowDeps,
			Stderr: log, Progress: p.Progress, Labels: Self().Labels(),
		}
		res, err := install.Ensure(ctx, cli, req)
		var ie *install.ImageError
		if errors.As(err, &ie) {
			pull, build, refused := firstUse(ie.Tried, ie.Env)
			if refused {
				// Someone else's image, named by the user: nothing is
				// fetched or built in its place.
				return fail(err, "docker pull %s (or docker load it), or name an mcpcage/... tag for mcpcage to build", ie.Tried[0])
			}
			// First use: get the image, saying how, then install.
			if gerr := obtainImage(ctx, cli, log, p.Progress, c.Kind, ie.Tried, pull, build); gerr != nil {
				return fail(fmt.Errorf("%v; no cage image could be pulled or built", gerr),
					"run `sudo mcpcage images build %s` where Debian's archive and npm are reachable, or docker pull %s", BuildArg(c.Kind), ie.Tried[0])
			}
			res, err = install.Ensure(ctx, cli, req)
		}
		if err != nil {
			return fail(err, "")
		}
		spec.Image = res.ImageID
		spec.ImageName = res.Image
		spec.Entrypoint = res.Command
		spec.Cmd = c.Args
		spec.Env = append(append([]string(nil), res.Env...), p.Env...)
		spec.WorkingDir = HomeInContainer
		spec.Mounts = append([]Mount{{Source: res.CacheDir, Target: res.MountPoint}}, spec.Mounts...)
		l = launch.Launch{Kind: c.Kind, Package: res.Package, Version: res.Version, Image: res.Image, ImageDigest: res.ImageID, Argv: c.Args}
	}
	if p.WorkDir != "" {
		spec.WorkingDir = p.WorkDir
	}
	if p.ScratchHome {
		spec.ScratchHome = true
	} else {
		homeDir, err := home.ServerHome(p.Name, l.Identity(), p.LegacyOwner)
		if err != nil {
			return fail(err, "")
		}
		if err := PrepareHome(homeDir); err != nil {
			return fail(err, "")
		}
		spec.Home = homeDir
	}
	if p.AllowNet || p.Egress != nil {
		if err := caBundle(c.Kind, &spec); err != nil {
			return fail(err, "fix or unset the variable, then try again")
		}
	}
	if gw != nil {
		spec.Egress = gw.Cage()
		spec.Env = append(spec.Env, gw.Env()...)
	}
	if gwc != nil {
		gerr := <-gwc
		gwc = nil
		if gerr != nil {
			return fail(gerr, "")
		}
	}
	if way == StdioPipes {
		bin, err := GatewayBinary()
		if err != nil {
			return fail(err, "")
		}
		base := filepath.Join(p.StateDir, "stdio")
		if p.StateDir == "" {
			if base, err = home.Sub("stdio"); err != nil {
				return fail(err, "")
			}
		}
		// The cage images have sh (their install runs in it); an image
		// of the user's may not.
		spec.Stdio = &CageStdio{Binary: bin, Dir: base, Shell: c.Kind != "image"}
	}
	if p.Launched != nil {
		p.Launched(l)
	}
	cg, err := Start(ctx, cli, spec)
	if err == nil {
		started.Store(cg)
	}
	if err == nil && gw != nil {
		gw.Launch(ctx)
		// A gateway that cannot start ends the session: its server would
		// fail each call without a word.
		go func() {
			if err := gw.Wait(); err != nil && ctx.Err() == nil {
				untrusted.Fprintf(log, "mcpcage: error: the egress gateway did not start (%v); stopping %q\n", err, p.Name)
				_ = cg.Stop(context.WithoutCancel(ctx))
			}
		}()
	}
	if err != nil {
		var im *ImageMissingError
		if errors.As(err, &im) {
			return fail(err, "docker pull %s (or `sudo mcpcage images build`), then try again", im.Image)
		}
		return fail(err, "")
	}
	return &Started{Cage: cg, Launch: l, Gateway: gw}, nil
}

// caBundle gives a server that may reach the network the CA files the
// install phase uses (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, PIP_CERT).
func caBundle(kind string, spec *Spec) error {
	ms, env, err := install.CABundle(kind)
	if err != nil {
		return err
	}
	for _, m := range ms {
		spec.Mounts = append(spec.Mounts, Mount{Source: m.Source, Target: m.Target})
	}
	spec.Env = append(spec.Env, env...)
	return nil
}

// ParseSize reads a size as `docker run --memory` does: 512m, 1g, 64k.
func ParseSize(s string) (int64, error) { return units.RAMInBytes(s) }

// FormatSize writes a size for a person: 512MiB.
func FormatSize(n int64) string { return units.BytesSize(float64(n)) }
