package cage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/harden"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// The egress gateway of a session started with --allow-host.
//
// The cage keeps NetworkMode none: a loopback interface, no route anywhere.
// Its entrypoint is a shim (mcpcage's own static binary, mounted read-only)
// that listens on 127.0.0.1 for DNS (the cage's only resolver), the proxy
// port and each allowed port, then runs the server in its place. The shim
// carries each connection over two named pipes, in a folder of the
// session's that both containers mount read-only, to the gateway: a
// container of its own on the upstream network (Docker's default bridge
// unless EgressSpec.Upstream names another), which decides on each
// connection by name and reports it (internal/egress). No network is made
// for a session, so the cage starts as fast as one with no network at all;
// the gateway starts beside it, and the shim holds a connection until the
// gateway opens the pipes.
//
// The gateway runs the same binary (the egress-gateway subcommand) from an
// image made locally by `docker import` of that one file: no registry. It is
// hardened like a cage: read-only root, no capabilities, no-new-privileges,
// nobody's uid, small memory and pid limits. It carries the owner labels, so
// Reap removes it when its mcpcage process is gone; a session's folder of
// pipes is locked for its life, and the next session removes those whose
// lock is free.

// LabelEgress marks a session's egress gateway container ("1").
const LabelEgress = "io.mcpcage.egress"

// EnvGatewayBinary names the static mcpcage binary the gateway image is
// made from and the shim runs, when the running mcpcage is not one (a
// development build with cgo, a test binary).
const EnvGatewayBinary = "MCPCAGE_GATEWAY_BINARY"

// EgressSpec describes one session's gateway.
type EgressSpec struct {
	Policy   egress.Policy
	Upstream string // the gateway's upstream network; "": Docker's default bridge
	Session  string
	Name     string // the server's name, for the container's name
	// Dir is the folder the session's pipes are made under (mcpcage's
	// state); "": a new temporary folder.
	Dir string
	// Events receives every connection attempt the gateway reports.
	Events func(egress.Event)
	// Lost hears each line of the gateway's output that was not an event
	// (too long, not JSON): skipped, never the end of the reading.
	Lost func()
	// Ended hears that the gateway's event stream ended before Stop (the
	// gateway died, was killed for its memory, or its output broke): its
	// connections can no longer be recorded.
	Ended func(why string)
	// Log receives the gateway's own errors; nil: none.
	Log io.Writer
	// Engine says what the engine is (harden.KindLater); nil: the gateway asks.
	Engine func() (harden.Kind, error)
}

// Gateway is a session's egress gateway: its pipes, then its container.
type Gateway struct {
	spec     EgressSpec
	bin      string
	pipes    string // the session's folder of pipes
	base     string // its parent, when made for this session alone ("": kept)
	unlock   func()
	cli      *client.Client
	id       string
	hijack   interface{ Close() error }
	events   chan struct{} // closed when the event stream has ended
	img      string        // the gateway's image and upstream network (Start)
	upstream string
	// launched is closed when the container's start (Launch) has ended,
	// with launchErr its error.
	launched  chan struct{}
	launchErr error
	stopped   sync.Once
	stopErr   error
	stopping  atomic.Bool // Stop has begun: the end of the events is expected
}

// NewGateway makes the session's pipes. The cage can start behind them
// (Cage) before the gateway's container does (Start): its shim waits.
func NewGateway(spec EgressSpec) (*Gateway, error) {
	bin, err := GatewayBinary()
	if err != nil {
		return nil, fmt.Errorf("cannot find mcpcage's own binary: %v", err)
	}
	if err := staticELF(bin); err != nil {
		return nil, &launch.UsageError{Msg: err.Error(), Fix: "build mcpcage with CGO_ENABLED=0 (make build), or set " + EnvGatewayBinary + " to such a build"}
	}
	g := &Gateway{spec: spec, bin: bin, events: make(chan struct{})}
	base := ""
	if spec.Dir != "" {
		base = filepath.Join(spec.Dir, "egress")
		if err := os.MkdirAll(base, 0o700); err != nil {
			return nil, fmt.Errorf("cannot make the egress folder: %v", err)
		}
	} else {
		if base, err = os.MkdirTemp("", "mcpcage-egress-"); err != nil {
			return nil, fmt.Errorf("cannot make the egress folder: %v", err)
		}
		g.base = base
	}
	fail := func(err error) (*Gateway, error) {
		g.removePipes()
		return nil, err
	}
	// Only mcpcage's user enters base; the folder inside is open to the
	// cage's and the gateway's users, who see it as their mount's root.
	if g.pipes, err = os.MkdirTemp(base, "pipes-"); err != nil {
		return fail(fmt.Errorf("cannot make the egress pipes' folder: %v", err))
	}
	unlock, ok, err := tryLock(g.pipes + ".lock")
	if err != nil || !ok {
		return fail(fmt.Errorf("cannot lock the egress pipes' folder: %v", err))
	}
	g.unlock = unlock
	if err := os.Chmod(g.pipes, 0o755); err != nil {
		return fail(fmt.Errorf("cannot open the egress pipes' folder to the cage: %v", err))
	}
	if err := egress.MakePipes(g.pipes); err != nil {
		return fail(err)
	}
	return g, nil
}

// reapPipes removes the folders of pipes under base whose session is gone
// (their lock is free).
func reapPipes(base string) {
	locks, _ := filepath.Glob(filepath.Join(base, "pipes-*.lock"))
	for _, l := range locks {
		unlock, ok, err := tryLock(l)
		if err != nil || !ok {
			continue
		}
		_ = os.RemoveAll(strings.TrimSuffix(l, ".lock"))
		_ = os.Remove(l)
		unlock()
	}
}

func (g *Gateway) removePipes() {
	if g.pipes != "" {
		_ = os.RemoveAll(g.pipes)
		_ = os.Remove(g.pipes + ".lock")
	}
	if g.unlock != nil {
		g.unlock()
	}
	if g.base != "" {
		_ = os.RemoveAll(g.base)
	}
}

// Cage is what the cage needs to sit behind this gateway (Spec.Egress).
func (g *Gateway) Cage() *CageEgress {
	return &CageEgress{Binary: g.bin, Pipes: g.pipes, Ports: g.spec.Policy.Ports()}
}

// Env points HTTPS_PROXY-honouring clients at the shim's proxy port. Clients
// that do not honour it reach the shim anyway: every allowed name resolves
// to it.
func (g *Gateway) Env() []string {
	proxy := "http://" + ShimAddr + ":" + strconv.Itoa(egress.ProxyPort)
	var env []string
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		env = append(env, k+"="+proxy)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
}

// GatewayBinary is the static mcpcage binary for the gateway image.
func GatewayBinary() (string, error) {
	if p := os.Getenv(EnvGatewayBinary); p != "" {
		return p, nil
	}
	return os.Executable()
}

// GatewayUsable says whether a gateway can be made here: nil when the
// binary GatewayBinary names is a static Linux binary.
func GatewayUsable() error {
	bin, err := GatewayBinary()
	if err != nil {
		return err
	}
	return staticELF(bin)
}

// staticELF refuses a binary that needs a dynamic loader: the gateway image
// holds nothing but the binary.
func staticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read %s as a Linux binary: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is not a static binary, and the egress gateway runs it alone in an empty image", path)
		}
	}
	return nil
}

// gatewayRef is the gateway image's tag for bin: a hash of its Go build ID,
// which the linker derives from the binary's content (reading it costs a
// millisecond; hashing the whole binary, tens at every start), or of the
// whole binary when it has none.
func gatewayRef(bin string) (string, error) {
	var id []byte
	if f, err := elf.Open(bin); err == nil {
		if sec := f.Section(".note.go.buildid"); sec != nil {
			// One note: namesz, descsz, type, "Go\0\0", the ID.
			if b, err := sec.Data(); err == nil && len(b) > 16 && string(b[12:16]) == "Go\x00\x00" {
				if n := int(f.ByteOrder.Uint32(b[4:8])); n > 0 && 16+n <= len(b) {
					id = append([]byte("go-buildid:"), b[16:16+n]...)
				}
			}
		}
		f.Close()
	}
	if id == nil {
		data, err := os.ReadFile(bin)
		if err != nil {
			return "", fmt.Errorf("cannot read %s: %v", bin, err)
		}
		id = data
	}
	sum := sha256.Sum256(id)
	return "mcpcage/egress:" + hex.EncodeToString(sum[:])[:16], nil
}

// gatewayImage returns the gateway image for bin (a static binary: NewGateway
// checked it), importing it on first use: a tar of the one file, tagged by
// gatewayRef so each mcpcage build gets its own and an existing one is
// reused.
func gatewayImage(ctx context.Context, cli *client.Client, bin string) (string, error) {
	ref, err := gatewayRef(bin)
	if err != nil {
		return "", err
	}
	if info, err := cli.ImageInspect(ctx, ref); err == nil {
		return info.ID, nil
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", bin, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "mcpcage", Mode: 0o555, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := tw.Write(data); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{
		Changes: []string{`ENTRYPOINT ["/mcpcage", "` + egress.GatewayCommand + `"]`, "USER 65534:65534", "LABEL " + LabelEgress + "=1"},
	})
	if err != nil {
		return "", fmt.Errorf("cannot make the egress gateway image: %s", oneLine(err))
	}
	defer rc.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil); err != nil {
		return "", fmt.Errorf("cannot make the egress gateway image: %s", oneLine(err))
	}
	info, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("the egress gateway image %s is missing after its import: %s", ref, oneLine(err))
	}
	return info.ID, nil
}

// Start checks what the gateway needs (the upstream network, its image,
// imported on first use); a failure there says what to do
// (*launch.UsageError). Launch then starts its container.
func (g *Gateway) Start(ctx context.Context, cli *client.Client) error {
	g.cli = cli
	img, upstream, err := g.check(ctx)
	if err != nil {
		return err
	}
	g.img, g.upstream = img, upstream
	return nil
}

// Launch starts the gateway's container in the background, after Start;
// call it once the cage has started (the two would only slow each other's
// start): the shim holds the cage's connections until the gateway opens
// the pipes. Wait says how that start went; Stop waits for it.
func (g *Gateway) Launch(ctx context.Context) {
	g.launched = make(chan struct{})
	go func() {
		defer close(g.launched)
		g.launchErr = g.launch(ctx)
	}()
}

// Wait waits for the start of the gateway's container (Launch) and returns
// its error: nil once the gateway runs.
func (g *Gateway) Wait() error {
	if g.launched == nil {
		return errors.New("the egress gateway was not launched")
	}
	<-g.launched
	return g.launchErr
}

// check finds the upstream network and the gateway's image.
func (g *Gateway) check(ctx context.Context) (img, upstream string, err error) {
	type imageResult struct {
		id  string
		err error
	}
	imgc := make(chan imageResult, 1)
	go func() {
		id, err := gatewayImage(ctx, g.cli, g.bin)
		imgc <- imageResult{id, err}
	}()
	upstream = g.spec.Upstream
	if upstream == "" {
		upstream = "bridge"
	}
	if _, err := g.cli.NetworkInspect(ctx, upstream, network.InspectOptions{}); err != nil {
		<-imgc
		if cerrdefs.IsNotFound(err) {
			return "", "", &launch.UsageError{Msg: fmt.Sprintf("the egress network %q does not exist", upstream), Fix: "give an existing network with --egress-network (docker network ls)"}
		}
		return "", "", fmt.Errorf("cannot inspect the egress network %q: %s", upstream, oneLine(err))
	}
	r := <-imgc
	return r.id, upstream, r.err
}

// launch creates and starts the gateway's container (of the image and on
// the network Start found) and waits for its ready line. On error the
// container is gone.
func (g *Gateway) launch(ctx context.Context) error {
	started := false
	defer func() {
		if !started {
			close(g.events)
		}
	}()
	labels := Self().Labels()
	labels[LabelEgress] = "1"
	labels[LabelSession] = g.spec.Session
	labels[LabelName] = g.spec.Name
	name := "mcpcage-" + strings.ToLower(g.spec.Name) + "-" + randomHex(3) + "-egress"
	cfg, hc, err := gatewayConfig(ctx, g.cli, g.spec.Engine, g.img, g.upstream, labels, g.pipes, append([]string{"--pipes", gatewayPipes}, g.spec.Policy.Args()...))
	if err != nil {
		return err
	}
	c, err := g.cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		return fmt.Errorf("cannot create the egress gateway: %s", oneLine(err))
	}
	g.id = c.ID
	fail := func(err error) error {
		_ = g.remove(ctx)
		g.id = ""
		return err
	}
	out, err := g.attach(ctx, g.spec.Log)
	if err != nil {
		return fail(err)
	}
	if err := g.cli.ContainerStart(ctx, g.id, container.StartOptions{}); err != nil {
		g.hijack.Close()
		return fail(fmt.Errorf("cannot start the egress gateway: %s", oneLine(err)))
	}
	started = true
	return g.awaitReady(ctx, out, g.spec.Events)
}

// gatewayPipes is where the gateway sees the session's pipes.
const gatewayPipes = "/egress"

// gatewayConfig is the gateway container: hardened like a cage, on the
// upstream network, with the session's pipes.
func gatewayConfig(ctx context.Context, cli client.APIClient, engine func() (harden.Kind, error), img, upstream string, labels map[string]string, pipes string, cmd []string) (*container.Config, *container.HostConfig, error) {
	cfg := &container.Config{
		Image: img,
		Cmd:   cmd,
		// The gateway verifies the hosts it speaks TLS to itself with
		// these (Go reads every file of SSL_CERT_DIR).
		Env:          []string{"SSL_CERT_DIR=/etc/mcpcage/ca"},
		User:         "65534:65534",
		AttachStdout: true,
		AttachStderr: true,
		Labels:       labels,
	}
	// The engine's default runtime, whatever the cage's: a runtime
	// registered for cages (gVisor with --network=none) has no network to
	// give the gateway.
	if engine == nil {
		engine = harden.KindLater(ctx, cli)
	}
	kind, err := engine()
	if err != nil {
		return nil, nil, err
	}
	hc, err := harden.Baseline{Engine: kind, Memory: 64 << 20, Pids: 64, CPUs: 1}.HostConfig(upstream)
	if err != nil {
		return nil, nil, err
	}
	hc.Mounts = append(gatewayRoots(), mount.Mount{Type: mount.TypeBind, Source: pipes, Target: gatewayPipes, ReadOnly: true,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	return cfg, hc, nil
}

// attach attaches to the gateway's output, passing its errors to log; it
// returns the events' stream.
func (g *Gateway) attach(ctx context.Context, log io.Writer) (io.Reader, error) {
	hj, err := g.cli.ContainerAttach(ctx, g.id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("cannot attach to the egress gateway: %s", oneLine(err))
	}
	g.hijack = hj.Conn
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(outW, errW, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		errW.CloseWithError(err)
	}()
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			if log != nil {
				fmt.Fprintf(log, "mcpcage: egress gateway: %s\n", printable(sc.Text(), 300))
			}
		}
	}()
	return outR, nil
}

// awaitReady reads the gateway's ready line, then passes its events on; on
// error the gateway is stopped and removed.
func (g *Gateway) awaitReady(ctx context.Context, out io.Reader, events func(egress.Event)) error {
	ready := make(chan string, 1)
	go g.readEvents(out, ready, events)
	select {
	case a, ok := <-ready:
		if !ok {
			_ = g.stopContainer(ctx)
			return errors.New("the egress gateway ended before it ran")
		}
		if a != gatewayPipes {
			_ = g.stopContainer(ctx)
			return fmt.Errorf("the egress gateway said it serves %q", a)
		}
	case <-time.After(15 * time.Second):
		_ = g.stopContainer(ctx)
		return errors.New("the egress gateway did not start within 15s")
	case <-ctx.Done():
		_ = g.stopContainer(ctx)
		return ctx.Err()
	}
	return nil
}

// readEvents reads the gateway's output: the ready line, then one event per
// line (egress.ReadEvents). A line that is not one is skipped and counted:
// the gateway's output is its own, but what it reports (names) came from
// the cage. An end of the stream before Stop is reported (Ended).
func (g *Gateway) readEvents(r io.Reader, ready chan<- string, events func(egress.Event)) {
	defer close(g.events)
	sent := false
	err := egress.ReadEvents(r, egress.EventSink{
		Ready: func(p string) {
			if !sent {
				sent = true
				ready <- p
				close(ready)
			}
		},
		Event: events,
		Lost:  g.spec.Lost,
	})
	if !sent {
		close(ready)
		return
	}
	if !g.stopping.Load() && g.spec.Ended != nil {
		why := "its output ended"
		if err != nil {
			why = "its output broke: " + oneLine(err)
		}
		g.spec.Ended(why)
	}
	_, _ = io.Copy(io.Discard, r)
}

// Stop ends the gateway (it reports the connections still open first), waits
// for its last events, and removes it and the session's pipes. Call it
// after the cage is gone. Safe to call more than once.
func (g *Gateway) Stop(ctx context.Context) error {
	g.stopping.Store(true)
	g.stopped.Do(func() {
		if g.launched != nil {
			<-g.launched
		} else {
			close(g.events) // never launched: no event stream
		}
		g.stopErr = g.stopContainer(ctx)
		g.removePipes()
	})
	return g.stopErr
}

// stopContainer ends and removes the gateway's container, if any.
func (g *Gateway) stopContainer(ctx context.Context) error {
	g.stopping.Store(true)
	if g.id == "" {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	timeout := 3
	_ = g.cli.ContainerStop(rctx, g.id, container.StopOptions{Signal: "SIGTERM", Timeout: &timeout})
	select {
	case <-g.events:
	case <-time.After(5 * time.Second):
	}
	if g.hijack != nil {
		g.hijack.Close()
	}
	err := g.remove(rctx)
	g.id = ""
	return err
}

func (g *Gateway) remove(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := removeContainer(rctx, g.cli, g.id); err != nil {
		return fmt.Errorf("cannot remove the egress gateway: %s", oneLine(err))
	}
	return nil
}

// removeContainer removes a container, or waits for the engine's own
// removal of it when one is under way.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if !cerrdefs.IsConflict(err) {
		return err
	}
	statusCh, errCh := cli.ContainerWait(ctx, id, container.WaitConditionRemoved)
	select {
	case <-statusCh:
		return nil
	case werr := <-errCh:
		if cerrdefs.IsNotFound(werr) {
			return nil
		}
		return err
	}
}

// gatewayRoots are the CA files the gateway verifies hosts with when it
// speaks TLS itself (a client that sends https:// URLs to HTTPS_PROXY in
// plain text): the system's bundle and those the user configured, mounted
// read-only.
func gatewayRoots() []mount.Mount {
	files := []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}
	for _, k := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "PIP_CERT"} {
		if v := os.Getenv(k); v != "" {
			files = append(files, v)
		}
	}
	var ms []mount.Mount
	seen := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
			ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: abs, Target: "/etc/mcpcage/ca/" + strconv.Itoa(len(ms)) + ".pem", ReadOnly: true})
		}
	}
	return ms
}

// printable keeps gateway text to one printable line: its errors may quote
// what the cage sent.
func printable(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	return untrusted.Line(s)
}

// Where the shim's parts are in a cage behind a gateway.
const (
	ShimBinary = "/.mcpcage/mcpcage" // the static mcpcage binary, read-only
	ShimPipes  = "/.mcpcage/egress"  // the session's pipes, read-only
	ShimAddr   = "127.0.0.1"         // where the shim listens
)

// CageEgress is what a cage behind a gateway needs of it (Spec.Egress).
type CageEgress struct {
	Binary string // the static mcpcage binary on the engine's host
	Pipes  string // the session's folder of pipes on the engine's host
	Ports  []int  // the policy's ports
}

// commandOf is the command the cage runs: the spec's, else the image's.
func commandOf(ctx context.Context, cli *client.Client, spec *Spec) ([]string, error) {
	ep, args := spec.Entrypoint, spec.Cmd
	if ep == nil {
		info, err := cli.ImageInspect(ctx, spec.Image)
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				return nil, &ImageMissingError{Image: spec.Image}
			}
			return nil, fmt.Errorf("cannot inspect image %s: %s", spec.Image, oneLine(err))
		}
		if info.Config != nil {
			ep = info.Config.Entrypoint
			if len(args) == 0 {
				args = info.Config.Cmd
			}
		}
	}
	argv := append(append([]string(nil), ep...), args...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("image %s names no command to run, and none was given", spec.Image)
	}
	return argv, nil
}

// behindShim makes the shim the cage's entrypoint, with the server's own
// command (the image's, where the spec gives none) after it.
func behindShim(ctx context.Context, cli *client.Client, spec *Spec) error {
	argv, err := commandOf(ctx, cli, spec)
	if err != nil {
		return err
	}
	shim := []string{ShimBinary, egress.ShimCommand, "--pipes", ShimPipes}
	for _, p := range spec.Egress.Ports {
		shim = append(shim, "--port", strconv.Itoa(p))
	}
	spec.Entrypoint = append(shim, "--")
	spec.Cmd = argv
	return nil
}

// behindLauncher makes the stdio launcher the cage's entrypoint (before the
// egress shim, when there is one), with what it runs after it.
func behindLauncher(ctx context.Context, cli *client.Client, spec *Spec) error {
	argv, err := commandOf(ctx, cli, spec)
	if err != nil {
		return err
	}
	spec.Entrypoint = []string{ShimBinary, LaunchCommand, "--dir", StdioDir, "--"}
	if spec.Stdio.Shell {
		spec.Entrypoint = []string{"/bin/sh", "-c", shellLaunch, "sh"}
	}
	spec.Cmd = argv
	return nil
}
