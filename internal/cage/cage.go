// Package cage runs one MCP server in a hardened Docker container and gives
// the proxy its stdio (a proxy.Server).
//
// Contract: a container started by Start has, unless the Spec says otherwise
// (AllowNet only):
//
//   - no network: NetworkMode "none" (a loopback interface only); AllowNet
//     gives Docker's default bridge, fully open; Egress keeps none, and puts
//     a shim in front of the server that carries connections to allowed
//     hosts to the session's egress gateway over two named pipes (see
//     egress.go);
//   - a read-only root filesystem; /tmp is a tmpfs of TmpSize bytes (mode 1777,
//     nosuid, nodev, exec: a server can already run any code through its own
//     interpreter, and servers that unpack helpers or virtual environments
//     there break under noexec);
//   - all capabilities dropped, no-new-privileges (setuid binaries do not
//     raise privileges), Docker's init as pid 1, a private IPC namespace;
//   - the engine's default seccomp profile without Unix sockets
//     (harden.SeccompProfile; the whole baseline is harden.Baseline): nothing in the cage can connect to a socket of the
//     host in a mounted folder, read-only or not;
//   - a non-root user even when the image says root: 1000:1000 when mcpcage
//     runs as root, else mcpcage's own uid:gid (so folders mounted :rw stay the
//     user's);
//   - memory (no swap), pids and CPU limits, no core dumps;
//   - HOME=/home/mcp, a private per-server folder of the host mounted
//     read-write (ScratchHome: an empty tmpfs instead), and the given Mounts
//     at their own paths; no other host path and never the Docker socket
//     (ResolveMount refuses it); a mount the cage's user
//     could not read (or, for a writable one, write) is refused before the
//     container is created (CheckAccess);
//   - logging driver "none": what the server prints is not kept by Docker;
//   - environment variables only as given, passed in the API request body,
//     never in any argv.
//
// Up sets up a whole session's cage from a Plan (image or install phase,
// HOME, egress gateway), Start the container alone; the Docker SDK is used
// in this package and internal/install only.
//
// Stop removes the whole container, so detached children go with it. Every
// container is named mcpcage-<name>-<random> and labelled (LabelCage and the
// owner labels); Reap removes those whose owner process is gone.
package cage

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcpcage/mcpcage/internal/harden"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// HomeInContainer is where the server's private HOME is mounted.
const HomeInContainer = "/home/mcp"

// Defaults for the limits.
const (
	DefaultMemory  = 512 << 20
	DefaultPids    = 256
	DefaultCPUs    = 1.0
	DefaultTmpSize = 64 << 20
)

// Spec describes one caged server.
type Spec struct {
	Name       string   // server name (ValidName); part of the container name
	Image      string   // image reference or ID
	ImageName  string   // the image as a person knows it, for labels and ps; "": Image
	Entrypoint []string // nil: the image's
	Cmd        []string // arguments (after Entrypoint)
	WorkingDir string   // "": the image's
	Env        []string // NAME=VALUE; HOME is set by the cage
	Mounts     []Mount
	// Masks are container paths hidden under an empty read-only tmpfs: the
	// parts of a mounted folder the server must not see (mcpcage's own
	// state when the user mounts a folder that holds it). See MasksFor.
	Masks []string
	Home  string // host folder mounted read-write as HOME; "" for none
	// ScratchHome makes HOME an empty tmpfs of TmpSize bytes, in place of
	// Home: what the server writes there never reaches the host and goes
	// with the container (protect --inspect).
	ScratchHome bool
	AllowNet    bool
	// Egress puts the cage behind its session's egress gateway (Gateway.
	// Cage): still no network, a shim in front of the server.
	Egress  *CageEgress
	Memory  int64   // bytes; 0 = DefaultMemory
	Pids    int64   // 0 = DefaultPids
	CPUs    float64 // 0 = DefaultCPUs
	TmpSize int64   // bytes; 0 = DefaultTmpSize
	Session string  // session id for the labels; "" = random
	// Runtime is the engine's OCI runtime for the container ("runsc" for
	// gVisor); "" is the engine's default (runc). GVisor says the runtime
	// is gVisor (CheckRuntime): the profile is GVisorSeccompProfile.
	Runtime string
	GVisor  bool
	// Stdio, when not nil, gives the server named pipes for stdin and
	// stdout in place of the engine's attach stream (stdio.go).
	Stdio *CageStdio
	// Engine says what the engine is (harden.KindLater, asked once per
	// session); nil: the cage asks.
	Engine func() (harden.Kind, error)
	// Log receives the cage's own hints (a write to a read-only place); nil: none.
	Log io.Writer
}

// User returns the uid:gid the server runs as (see the package doc).
func User() string {
	uid, gid := os.Geteuid(), os.Getegid()
	if uid <= 0 {
		return "1000:1000"
	}
	return strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
}

// PrepareHome creates a server's private HOME folder on the host and makes it
// usable by the container's user.
func PrepareHome(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the server's HOME %s: %w", dir, err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, 1000, 1000); err != nil {
			return fmt.Errorf("cannot give the server's HOME %s to uid 1000: %w", dir, err)
		}
	}
	return nil
}

// ImageMissingError is returned when the image is not on this machine.
type ImageMissingError struct{ Image string }

func (e *ImageMissingError) Error() string {
	return fmt.Sprintf("image %s is not on this machine", e.Image)
}

// DockerError says Docker could not be reached, and why: the three causes a
// person fixes differently (no permission on the socket, no engine running,
// DOCKER_HOST naming nothing) are told apart, without the client's URL-encoded
// transport detail.
type DockerError struct {
	Err error
	// Host is the engine address tried; FromEnv says DOCKER_HOST named it.
	Host    string
	FromEnv bool
	dial    error // a second dial's error, when the client's hides the cause
}

// DockerCause is why the engine could not be reached.
type DockerCause int

const (
	DockerUnreachable DockerCause = iota // anything else (a timeout, a TLS error)
	DockerPermission                     // the socket is there, this user may not use it
	DockerNotRunning                     // nothing listens where the engine should be
	DockerHostWrong                      // DOCKER_HOST names no socket or a bad address
)

func newDockerError(err error) *DockerError {
	e := &DockerError{Err: err, Host: os.Getenv("DOCKER_HOST")}
	e.FromEnv = e.Host != ""
	if e.Host == "" {
		e.Host = findDockerHost()
	}
	if e.Host == "" {
		e.Host = client.DefaultDockerHost
	}
	if client.IsErrConnectionFailed(err) {
		// The client says only "Cannot connect": dial again to learn why.
		e.dial = dialEngine(e.Host)
	}
	return e
}

// dialEngine connects to a unix or tcp engine address and returns the
// dial's error (nil if it connects).
func dialEngine(host string) error {
	network, addr, ok := strings.Cut(host, "://")
	if !ok || (network != "unix" && network != "tcp") {
		return nil
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// Cause classifies Err.
func (e *DockerError) Cause() DockerCause {
	err := e.Err
	if e.dial != nil {
		err = e.dial
	}
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || strings.Contains(msg, "permission denied"):
		return DockerPermission
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		// A socket left by an engine that stopped, or a port nobody serves.
		return DockerNotRunning
	case errors.Is(err, syscall.ENOENT) || strings.Contains(msg, "no such file or directory"):
		if e.FromEnv {
			return DockerHostWrong
		}
		return DockerNotRunning
	case e.FromEnv && (strings.Contains(msg, "unable to parse docker host") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "unsupported protocol") || strings.Contains(msg, "invalid")):
		return DockerHostWrong
	}
	return DockerUnreachable
}

func (e *DockerError) Error() string {
	name := engineName(e.Host)
	if name == "" {
		name = "Docker"
	}
	switch e.Cause() {
	case DockerPermission:
		return fmt.Sprintf("no permission to use %s at %s (permission denied on its socket)", name, e.Host)
	case DockerNotRunning:
		return fmt.Sprintf("%s is not running: nothing answers at %s", name, e.Host)
	case DockerHostWrong:
		err := e.Err
		if e.dial != nil {
			err = e.dial
		}
		return fmt.Sprintf("DOCKER_HOST=%s names no Docker engine (%s)", e.Host, transportCause(err))
	}
	if e.dial != nil {
		return fmt.Sprintf("cannot reach Docker at %s: %s", e.Host, transportCause(e.dial))
	}
	return fmt.Sprintf("cannot reach Docker at %s: %s", e.Host, transportCause(e.Err))
}

// Hint says what to do about it.
func (e *DockerError) Hint() string {
	switch e.Cause() {
	case DockerPermission:
		return "add your user to the docker group (sudo usermod -aG docker $USER, then log in again), or use rootless Docker and set DOCKER_HOST to its socket"
	case DockerNotRunning:
		if e.FromEnv {
			return "start the engine DOCKER_HOST names, or unset DOCKER_HOST to use the default one"
		}
		return "start Docker (sudo systemctl start docker, or open Docker Desktop), then try again"
	case DockerHostWrong:
		return "fix or unset DOCKER_HOST (`docker context ls` lists the engines you have)"
	}
	return "check that Docker runs (docker info), then try again"
}

func (e *DockerError) Unwrap() error { return e.Err }

// transportCause is the innermost part of a dial error ("i/o timeout"), not
// the client's request URL.
func transportCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return oneLine(op.Err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within 10s"
	}
	s := oneLine(err)
	if k := strings.LastIndex(s, ": "); k >= 0 {
		s = s[k+2:]
	}
	return s
}

// Engine is a connection to the container engine, from Connect.
type Engine = *client.Client

// Connect returns a client for the engine given by the environment
// (DOCKER_HOST etc.; without it, see findDockerHost), with the API version
// negotiated, after checking that the engine answers.
func Connect(ctx context.Context) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if os.Getenv("DOCKER_HOST") == "" {
		if h := findDockerHost(); h != "" {
			opts = append(opts, client.WithHost(h))
		}
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, newDockerError(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ping, err := cli.Ping(pctx)
	if err != nil {
		cli.Close()
		return nil, newDockerError(err)
	}
	// The answer just read names the engine's version: no second ping.
	cli.NegotiateAPIVersionPing(ping)
	return cli, nil
}

// Cage is a running caged server. It implements proxy.Server.
type Cage struct {
	cli    *client.Client
	id     string
	name   string
	spec   Spec
	hijack types.HijackedResponse
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *io.PipeReader
	pipes  *stdioPipes // the stdio pipes (Spec.Stdio); nil on the attach stream

	done     chan struct{} // closed when the container has stopped
	exitCode int
	oom      atomic.Bool
	waitErr  error

	demuxed  chan struct{}
	killed   atomic.Bool // Stop found the server still running
	removing atomic.Bool // Stop is removing the container
	stopOnce sync.Once
	stopErr  error
}

// ID is the container id.
func (c *Cage) ID() string { return c.id }

// ContainerName is the container's name.
func (c *Cage) ContainerName() string { return c.name }

// Start creates, attaches and starts the container for spec.
func Start(ctx context.Context, cli *client.Client, spec Spec) (*Cage, error) {
	return start(ctx, cli, spec, nil)
}

// start is Start with a hook that may weaken the configuration: the escape
// suite's control cases use it to show each probe would succeed without the
// hardening it tests.
func start(ctx context.Context, cli *client.Client, spec Spec, tweak func(*container.Config, *container.HostConfig)) (*Cage, error) {
	if err := launch.ValidName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Session == "" {
		spec.Session = randomHex(8)
	}
	for _, m := range spec.Mounts {
		if err := CheckAccess(m); err != nil {
			return nil, err
		}
	}
	if spec.Egress != nil {
		if err := behindShim(ctx, cli, &spec); err != nil {
			return nil, err
		}
	}
	var pipes *stdioPipes
	if spec.Stdio != nil {
		var err error
		if pipes, err = newStdioPipes(spec.Stdio.Dir); err != nil {
			return nil, err
		}
		st := *spec.Stdio
		st.Dir = pipes.dir
		spec.Stdio = &st
		if err := behindLauncher(ctx, cli, &spec); err != nil {
			pipes.remove()
			return nil, err
		}
	}
	cfg, hc, err := configs(ctx, cli, spec)
	if err != nil {
		return nil, err
	}
	if err != nil {
		if pipes != nil {
			pipes.remove()
		}
		return nil, err
	}
	if tweak != nil {
		tweak(cfg, hc)
	}
	name := "mcpcage-" + strings.ToLower(spec.Name) + "-" + randomHex(3)
	created, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		if pipes != nil {
			pipes.remove()
		}
		if cerrdefs.IsNotFound(err) {
			return nil, &ImageMissingError{Image: spec.Image}
		}
		if isConnErr(err) {
			return nil, newDockerError(err)
		}
		return nil, fmt.Errorf("cannot create the container for %q: %s", spec.Name, oneLine(err))
	}
	c := &Cage{cli: cli, id: created.ID, name: name, spec: spec, pipes: pipes, done: make(chan struct{}), demuxed: make(chan struct{})}
	fail := func(err error) (*Cage, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		_ = cli.ContainerRemove(rctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if pipes != nil {
			pipes.close()
			pipes.remove()
		}
		return nil, err
	}
	// On pipes the attach stream carries stderr alone.
	c.hijack, err = cli.ContainerAttach(ctx, c.id, container.AttachOptions{Stream: true, Stdin: pipes == nil, Stdout: pipes == nil, Stderr: true})
	if err != nil {
		return fail(fmt.Errorf("cannot attach to the container for %q: %s", spec.Name, oneLine(err)))
	}
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	c.stdin, c.stdout, c.stderr = &stdinConn{h: &c.hijack}, outR, errR
	if pipes != nil {
		c.stdin, c.stdout = pipes.in, pipes.out
	}
	var errDst io.Writer = errW
	if spec.Log != nil {
		w := &roWatcher{next: errW, log: spec.Log, name: spec.Name, seen: map[string]bool{}, writable: []string{"/tmp"}}
		for _, m := range spec.Mounts {
			if m.Writable {
				w.writable = append(w.writable, m.Target)
			}
		}
		errDst = w
	}
	go func() {
		defer close(c.demuxed)
		_, err := stdcopy.StdCopy(outW, errDst, c.hijack.Reader)
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		errW.CloseWithError(err)
	}()
	if err := cli.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		c.hijack.Close()
		return fail(fmt.Errorf("cannot start %q: %s", spec.Name, oneLine(err)))
	}
	if pipes != nil {
		pipes.open()
	}
	go c.wait()
	return c, nil
}

func (c *Cage) wait() {
	defer close(c.done)
	if c.pipes != nil {
		// Once the container has stopped nothing in it holds a pipe: an
		// open still waiting never returns by itself.
		defer c.pipes.unblock()
	}
	ctx := context.Background()
	statusCh, errCh := c.cli.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
	select {
	case st := <-statusCh:
		c.exitCode = int(st.StatusCode)
		if st.Error != nil && st.Error.Message != "" && !c.removing.Load() {
			c.waitErr = errors.New(st.Error.Message)
		}
	case err := <-errCh:
		c.exitCode = -1
		c.waitErr = err
		if c.removing.Load() {
			// Stop removed it while it ran: Podman ends the wait with
			// an error ("container has already been removed", as an
			// error or as the status's message) where Docker answers
			// the kill's status. Both are the kill.
			c.exitCode, c.waitErr = 137, nil
		}
		return
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := c.cli.ContainerInspect(ictx, c.id)
	if err != nil || info.State == nil {
		return
	}
	if info.State.OOMKilled {
		c.oom.Store(true)
		return
	}
	if c.exitCode != 137 {
		return
	}
	// A SIGKILL exit (137) may still be an OOM kill the engine's state
	// does not show: the engine sets OOMKilled only when the kernel's OOM
	// notice reaches it before the exit does, and on a loaded machine it
	// can come later (seen in CI under the race detector, more than 3 s
	// late). The engine still reports the notice as an "oom" event, so
	// that is asked for: from the container's start, for up to 3 s. Stop
	// removes the container, whose "destroy" event ends the asking at once.
	ectx, ecancel := context.WithTimeout(ctx, 3*time.Second)
	defer ecancel()
	since := info.State.StartedAt
	if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		since = strconv.FormatInt(t.Add(-time.Second).Unix(), 10)
	}
	msgs, errs := c.cli.Events(ectx, events.ListOptions{Since: since, Filters: filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", c.id),
		filters.Arg("event", string(events.ActionOOM)), filters.Arg("event", string(events.ActionDestroy)))})
	select {
	case m := <-msgs:
		c.oom.Store(m.Action == events.ActionOOM)
	case <-errs:
	}
}

func configs(ctx context.Context, cli client.APIClient, spec Spec) (*container.Config, *container.HostConfig, error) {
	mem := spec.Memory
	if mem <= 0 {
		mem = DefaultMemory
	}
	pids := spec.Pids
	if pids <= 0 {
		pids = DefaultPids
	}
	cpus := spec.CPUs
	if cpus <= 0 {
		cpus = DefaultCPUs
	}
	tmp := spec.TmpSize
	if tmp <= 0 {
		tmp = DefaultTmpSize
	}
	uid, gid, _ := strings.Cut(User(), ":")
	labels := Self().Labels()
	labels[LabelCage] = "1"
	labels[LabelName] = spec.Name
	labels[LabelSession] = spec.Session
	labels[LabelImage] = spec.ImageName
	if spec.ImageName == "" {
		labels[LabelImage] = spec.Image
	}

	env := []string{"HOME=" + HomeInContainer}
	for _, e := range spec.Env {
		if !strings.HasPrefix(e, "HOME=") {
			env = append(env, e)
		}
	}
	cfg := &container.Config{
		Image:        spec.Image,
		Entrypoint:   spec.Entrypoint,
		Cmd:          spec.Cmd,
		WorkingDir:   spec.WorkingDir,
		Env:          env,
		User:         User(),
		AttachStdin:  spec.Stdio == nil,
		AttachStdout: spec.Stdio == nil,
		AttachStderr: true,
		OpenStdin:    spec.Stdio == nil,
		StdinOnce:    spec.Stdio == nil,
		Labels:       labels,
	}
	var mounts []mount.Mount
	if spec.Home != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: spec.Home, Target: HomeInContainer,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	for _, m := range spec.Mounts {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: !m.Writable,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	for _, m := range spec.Masks {
		// Docker mounts parents first, so this lands on top of the bind.
		mounts = append(mounts, mount.Mount{Type: mount.TypeTmpfs, Target: m, ReadOnly: true,
			TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o500}})
	}
	engine := spec.Engine
	if engine == nil {
		engine = harden.KindLater(ctx, cli)
	}
	kind, err := engine()
	if err != nil {
		return nil, nil, err
	}
	hc, err := harden.Baseline{Runtime: spec.Runtime, GVisor: spec.GVisor, Engine: kind, Memory: mem, Pids: pids, CPUs: cpus}.HostConfig("none")
	if err != nil {
		return nil, nil, err
	}
	// uid= and gid=: Docker copies the mode of the image's own /tmp onto
	// the tmpfs whatever mode= says (engine 20.10), and images made from
	// scratch often have it 0755 and root's. Podman takes mode= as it is,
	// and refuses uid= and gid=.
	owner := ",uid=" + uid + ",gid=" + gid
	if kind == harden.Podman {
		owner = ""
	}
	hc.Tmpfs = map[string]string{"/tmp": "rw,nosuid,nodev,exec,mode=1777,size=" + strconv.FormatInt(tmp, 10) + owner}
	hc.Mounts = mounts
	if spec.ScratchHome {
		hc.Tmpfs[HomeInContainer] = "rw,nosuid,nodev,mode=0700,size=" + strconv.FormatInt(tmp, 10) + owner
	}
	if spec.AllowNet {
		hc.NetworkMode = "bridge"
	}
	// mcpcage's binary: the egress shim, or the stdio launcher of an image
	// without a shell.
	if spec.Egress != nil || spec.Stdio != nil && !spec.Stdio.Shell {
		bin := ""
		if spec.Egress != nil {
			bin = spec.Egress.Binary
		} else {
			bin = spec.Stdio.Binary
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: bin, Target: ShimBinary, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	if s := spec.Stdio; s != nil {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.Dir, Target: StdioDir, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	if e := spec.Egress; e != nil {
		// The shim serves DNS and the allowed ports on the loopback
		// address: a namespace of the cage's own, so low ports harm no one.
		hc.DNS = []string{ShimAddr}
		hc.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
		hc.Mounts = append(hc.Mounts,
			mount.Mount{Type: mount.TypeBind, Source: e.Pipes, Target: ShimPipes, ReadOnly: true,
				BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	return cfg, hc, nil
}

// Stdin is the server's stdin; Close sends EOF.
func (c *Cage) Stdin() io.WriteCloser { return c.stdin }

// Stdout is the server's stdout.
func (c *Cage) Stdout() io.Reader { return c.stdout }

// Stderr is the server's stderr.
func (c *Cage) Stderr() io.Reader { return c.stderr }

// Wait blocks until the container has stopped and returns its exit status.
func (c *Cage) Wait() (int, error) {
	<-c.done
	return c.exitCode, c.waitErr
}

// Exited reports whether the container has stopped, without blocking.
func (c *Cage) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// OOMKilled reports whether the kernel killed a process of the cage for
// exceeding its memory limit. Valid once Wait has returned.
func (c *Cage) OOMKilled() bool {
	select {
	case <-c.done:
		return c.oom.Load()
	default:
		return false
	}
}

// Killed reports whether Stop ended a server that was still running: its
// exit status is then mcpcage's doing, not the server's.
// Valid once Stop has returned.
func (c *Cage) Killed() bool { return c.killed.Load() }

// Stop removes the container (every process in it) and releases the
// connection. It is safe to call more than once, and works after ctx is
// cancelled: a cage is removed even when mcpcage is interrupted.
func (c *Cage) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		// Whether the server still ran is read from the engine: the wait
		// goroutine may not have heard of an exit yet.
		if info, err := c.cli.ContainerInspect(rctx, c.id); err == nil && info.State != nil {
			c.killed.Store(info.State.Running)
			if info.State.OOMKilled {
				c.oom.Store(true)
			}
		} else {
			c.killed.Store(!c.Exited())
		}
		c.removing.Store(true)
		err := c.cli.ContainerRemove(rctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			c.stopErr = fmt.Errorf("cannot remove container %s: %s", c.name, oneLine(err))
		}
		c.hijack.Close()
		if c.pipes != nil {
			c.pipes.close()
			c.pipes.remove()
		}
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
		}
		select {
		case <-c.demuxed:
		case <-t.C:
		}
	})
	return c.stopErr
}

// stdinConn writes to the attached stdin; Close half-closes the connection,
// which the engine turns into EOF on the server's stdin (StdinOnce).
type stdinConn struct {
	h      *types.HijackedResponse
	mu     sync.Mutex
	closed bool
}

func (s *stdinConn) Write(p []byte) (int, error) {
	return s.h.Conn.Write(p)
}

func (s *stdinConn) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.h.CloseWrite()
}

// NewSession is a fresh session id (Spec.Session), for a session whose other
// containers (its egress gateway) must carry the same one.
func NewSession() string { return randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func isConnErr(err error) bool {
	return client.IsErrConnectionFailed(err) || strings.Contains(err.Error(), "Cannot connect to the Docker daemon")
}

// oneLine keeps an engine error to one line: what the person needs, not a dump.
func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if k := strings.IndexByte(s, '\n'); k >= 0 {
		s = s[:k]
	}
	s = strings.TrimPrefix(s, "Error response from daemon: ")
	return s
}

// roWatcher passes the server's stderr through and, when it reports that a
// file or folder could not be created because the disk is read-only, logs a
// hint that says which places are writable. Node reports ENOENT, not EROFS,
// when mkdir fails on a read-only filesystem, so both are recognised.
type roWatcher struct {
	next io.Writer
	log  io.Writer
	name string
	buf  []byte
	seen map[string]bool
	// writable places, where ENOENT is a real missing parent, not a read-only disk
	writable []string
}

func (w *roWatcher) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		k := indexNL(w.buf)
		if k < 0 {
			break
		}
		w.check(string(w.buf[:k]))
		w.buf = w.buf[k+1:]
	}
	if len(w.buf) > 64<<10 {
		w.buf = w.buf[:0]
	}
	return w.next.Write(p)
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// ReadOnlyPath extracts the path from a server's error line about a failed
// write on a read-only filesystem (node's "ENOENT: ..., mkdir '/x'" or
// "EROFS: ..., open '/x'", Python's "[Errno 30] Read-only file system: '/x'"),
// and "" when the line is not one.
func ReadOnlyPath(line string) string {
	for _, key := range []string{"EROFS", "ENOENT: no such file or directory, mkdir", "Read-only file system"} {
		k := strings.Index(line, key)
		if k < 0 {
			continue
		}
		rest := line[k:]
		q := strings.IndexAny(rest, `'"`)
		if q < 0 {
			return ""
		}
		quote := rest[q]
		rest = rest[q+1:]
		e := strings.IndexByte(rest, quote)
		if e <= 0 {
			return ""
		}
		p := rest[:e]
		// The line is the server's: a path is printed in the hint only
		// when it looks like one.
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "'\"") || strings.IndexFunc(p, unicode.IsControl) >= 0 {
			return ""
		}
		return p
	}
	return ""
}

func (w *roWatcher) check(line string) {
	p := ReadOnlyPath(line)
	if p == "" || w.seen[p] || len(w.seen) > 8 {
		return
	}
	for _, d := range w.writable {
		if within(p, d) {
			return
		}
	}
	w.seen[p] = true
	// The path is the server's: shown escaped (a bidi control is no
	// control character to unicode.IsControl).
	var msg string
	if within(p, HomeInContainer) {
		msg = untrusted.Sprintf("mcpcage: hint: %q could not write %s: HOME is not writable; check that %s is writable by the cage's user (%s)", w.name, p, HomeInContainer, User())
	} else {
		msg = untrusted.Sprintf("mcpcage: hint: %q could not write %s: the cage's disk is read-only; only HOME (%s), /tmp and folders given with --mount PATH:rw are writable", w.name, p, HomeInContainer)
	}
	bw := bufio.NewWriter(w.log)
	fmt.Fprintln(bw, msg)
	bw.Flush()
}
