package cage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// The egress gateway of a session started with --allow-host.
//
// The cage joins a network of its own, created --internal and with no
// address on the host's side of its bridge (so the host is not reachable
// through it either); the only other member is the gateway container, which
// also sits on the upstream network (Docker's default bridge unless
// EgressSpec.Upstream names another). The gateway runs mcpcage's own static
// binary (the egress-gateway subcommand) from an image made locally by
// `docker import` of that one file: no registry. It is hardened like a cage:
// read-only root, no capabilities (an unprivileged port sysctl lets it serve
// DNS and 443), no-new-privileges, nobody's uid, small memory and pid
// limits. Network and container carry the owner labels, so Reap removes them
// when their mcpcage process is gone.

// LabelEgress marks a session's egress network and gateway container ("1").
const LabelEgress = "io.mcpcage.egress"

// EnvGatewayBinary names the static mcpcage binary the gateway image is
// made from, when the running mcpcage is not one (a development build with
// cgo, a test binary).
const EnvGatewayBinary = "MCPCAGE_GATEWAY_BINARY"

// EgressSpec describes one session's gateway.
type EgressSpec struct {
	Policy   egress.Policy
	Upstream string // the gateway's upstream network; "": Docker's default bridge
	Session  string
	Name     string // the server's name, for the objects' names
	// Events receives every connection attempt the gateway reports.
	Events func(egress.Event)
	// Log receives the gateway's own errors; nil: none.
	Log io.Writer
}

// Gateway is a running egress gateway and its cage network.
type Gateway struct {
	cli     *client.Client
	netID   string
	netName string
	id      string
	addr    netip.Addr
	hijack  interface{ Close() error }
	stdin   io.Writer // a claimed spare's: the claim is written here
	// holder is a claimed spare's holder container, whose network
	// namespace the cage joins; holdConn its attachment (its stdin).
	holder   string
	holdConn interface{ Close() error }
	// spareCancel and spareDone are the background making of the next
	// spare (prepareNext).
	spareCancel context.CancelFunc
	spareDone   chan struct{}
	events      chan struct{} // closed when the event stream has ended
	stopped     sync.Once
	stopErr     error
}

// Network is the cage's network (Spec.Network): for a claimed spare, the
// holder's network namespace.
func (g *Gateway) Network() string {
	if g.holder != "" {
		return "container:" + g.holder
	}
	return g.netName
}

// Addr is the gateway's address on the cage's network: the cage's DNS server.
func (g *Gateway) Addr() netip.Addr { return g.addr }

// Env points HTTPS_PROXY-honouring clients at the gateway. Clients that do
// not honour it reach the gateway anyway: every allowed name resolves to it.
func (g *Gateway) Env() []string {
	proxy := "http://" + netip.AddrPortFrom(g.addr, egress.ProxyPort).String()
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

// GatewayImage returns the gateway image for bin, importing it on first use:
// a tar of the one file, tagged by the binary's hash so each mcpcage build
// gets its own and an existing one is reused.
func GatewayImage(ctx context.Context, cli *client.Client, bin string) (string, error) {
	if err := staticELF(bin); err != nil {
		return "", &launch.UsageError{Msg: err.Error(), Hint: "build mcpcage with CGO_ENABLED=0 (make build), or set " + EnvGatewayBinary + " to such a build"}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", bin, err)
	}
	sum := sha256.Sum256(data)
	ref := "mcpcage/egress:" + hex.EncodeToString(sum[:])[:16]
	if info, err := cli.ImageInspect(ctx, ref); err == nil {
		return info.ID, nil
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

// StartGateway creates the session's cage network and starts its gateway,
// returning once the gateway listens. On error nothing is left behind.
func StartGateway(ctx context.Context, cli *client.Client, spec EgressSpec) (*Gateway, error) {
	bin, err := GatewayBinary()
	if err != nil {
		return nil, fmt.Errorf("cannot find mcpcage's own binary: %v", err)
	}
	if err := staticELF(bin); err != nil {
		return nil, &launch.UsageError{Msg: err.Error(), Hint: "build mcpcage with CGO_ENABLED=0 (make build), or set " + EnvGatewayBinary + " to such a build"}
	}
	// The image (the binary's hash; an import the first time) while the
	// networks are checked and made: the gateway's creation waits for both.
	type imageResult struct {
		id  string
		err error
	}
	imgc := make(chan imageResult, 1)
	go func() {
		id, err := GatewayImage(ctx, cli, bin)
		imgc <- imageResult{id, err}
	}()
	upstream := spec.Upstream
	if upstream == "" {
		upstream = "bridge"
	}
	if _, err := cli.NetworkInspect(ctx, upstream, network.InspectOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, &launch.UsageError{Msg: fmt.Sprintf("the egress network %q does not exist", upstream), Hint: "give an existing network with --egress-network (docker network ls)"}
		}
		return nil, fmt.Errorf("cannot inspect the egress network %q: %s", upstream, oneLine(err))
	}
	labels := Self().Labels()
	labels[LabelEgress] = "1"
	labels[LabelSession] = spec.Session
	labels[LabelName] = spec.Name
	base := "mcpcage-" + strings.ToLower(spec.Name) + "-" + randomHex(3)
	g := &Gateway{cli: cli, netName: base + "-net", events: make(chan struct{})}
	fail := func(err error) (*Gateway, error) {
		close(g.events)
		_ = g.remove(ctx)
		return nil, err
	}
	var subnet string
	g.netID, subnet, err = createCageNetwork(ctx, cli, g.netName, labels)
	if err != nil {
		return fail(err)
	}
	img := <-imgc
	if img.err != nil {
		return fail(img.err)
	}
	cfg, hc := gatewayConfig(img.id, upstream, labels, append([]string{"--subnet", subnet}, spec.Policy.Args()...))
	c, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, base+"-egress")
	if err != nil {
		return fail(fmt.Errorf("cannot create the egress gateway: %s", oneLine(err)))
	}
	g.id = c.ID
	if err := cli.NetworkConnect(ctx, g.netID, g.id, nil); err != nil {
		return fail(fmt.Errorf("cannot connect the egress gateway to the cage's network: %s", oneLine(err)))
	}
	out, err := g.attach(ctx, spec.Log, false)
	if err != nil {
		return fail(err)
	}
	if err := cli.ContainerStart(ctx, g.id, container.StartOptions{}); err != nil {
		g.hijack.Close()
		return fail(fmt.Errorf("cannot start the egress gateway: %s", oneLine(err)))
	}
	if err := g.awaitReady(ctx, out, spec.Events); err != nil {
		return nil, err
	}
	return g, nil
}

// createCageNetwork makes a cage's network: internal, and with no address
// on the host's end of its bridge. It returns its ID and subnet; on error
// nothing is left.
func createCageNetwork(ctx context.Context, cli *client.Client, name string, labels map[string]string) (string, string, error) {
	created, err := cli.NetworkCreate(ctx, name, network.CreateOptions{
		Driver:   "bridge",
		Internal: true,
		Labels:   labels,
		// No address on the host's end of the bridge: a cage could
		// otherwise reach every host service that listens on all addresses.
		Options: map[string]string{"com.docker.network.bridge.inhibit_ipv4": "true"},
	})
	if err != nil {
		return "", "", fmt.Errorf("cannot create the cage's network: %s", oneLine(err))
	}
	ni, err := cli.NetworkInspect(ctx, created.ID, network.InspectOptions{})
	if err != nil || len(ni.IPAM.Config) == 0 {
		_ = cli.NetworkRemove(context.WithoutCancel(ctx), created.ID)
		return "", "", fmt.Errorf("cannot read the cage network's subnet: %v", err)
	}
	return created.ID, ni.IPAM.Config[0].Subnet, nil
}

// gatewayConfig is the gateway container: hardened like a cage, on the
// upstream network (the cage's is connected before its start).
func gatewayConfig(img, upstream string, labels map[string]string, cmd []string) (*container.Config, *container.HostConfig) {
	pids := int64(64)
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
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(upstream),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "none"},
		Sysctls:        map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"},
		Mounts:         gatewayRoots(),
		Resources: container.Resources{
			Memory: 64 << 20, MemorySwap: 64 << 20, NanoCPUs: 1e9, PidsLimit: &pids,
			Ulimits: []*container.Ulimit{{Name: "core", Soft: 0, Hard: 0}},
		},
	}
	return cfg, hc
}

// attach attaches to the gateway's output (and its stdin when claiming a
// spare), passing its errors to log; it returns the events' stream.
func (g *Gateway) attach(ctx context.Context, log io.Writer, stdin bool) (io.Reader, error) {
	hj, err := g.cli.ContainerAttach(ctx, g.id, container.AttachOptions{Stream: true, Stdin: stdin, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("cannot attach to the egress gateway: %s", oneLine(err))
	}
	g.hijack = hj.Conn
	g.stdin = hj.Conn
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

// awaitReady reads the gateway's ready line and its address, then passes
// its events on; on error the gateway is stopped and removed.
func (g *Gateway) awaitReady(ctx context.Context, out io.Reader, events func(egress.Event)) error {
	ready := make(chan string, 1)
	go g.readEvents(out, ready, events)
	var err error
	select {
	case a, ok := <-ready:
		if !ok {
			_ = g.Stop(ctx)
			return errors.New("the egress gateway ended before it listened")
		}
		g.addr, err = netip.ParseAddr(a)
		if err != nil {
			_ = g.Stop(ctx)
			return fmt.Errorf("the egress gateway said it listens at %q", a)
		}
	case <-time.After(15 * time.Second):
		_ = g.Stop(ctx)
		return errors.New("the egress gateway did not start within 15s")
	case <-ctx.Done():
		_ = g.Stop(ctx)
		return ctx.Err()
	}
	return nil
}

// readEvents reads the gateway's output: the ready line, then one event per
// line. A line that is not one is dropped: the gateway's output is its own,
// but what it reports (names) came from the cage.
func (g *Gateway) readEvents(r io.Reader, ready chan<- string, events func(egress.Event)) {
	defer close(g.events)
	defer close(ready)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	first := true
	for sc.Scan() {
		if first {
			var rd egress.Ready
			if json.Unmarshal(sc.Bytes(), &rd) == nil && rd.Ready != "" {
				ready <- rd.Ready
				first = false
			}
			continue
		}
		var e egress.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Verdict == "" {
			continue
		}
		if events != nil {
			events(e)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// Stop ends the gateway (it reports the connections still open first), waits
// for its last events, and removes it and the cage's network. Call it after
// the cage is gone. Safe to call more than once.
func (g *Gateway) Stop(ctx context.Context) error {
	g.stopped.Do(func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		if g.spareCancel != nil {
			g.spareCancel()
			<-g.spareDone
		}
		timeout := 3
		_ = g.cli.ContainerStop(rctx, g.id, container.StopOptions{Signal: "SIGTERM", Timeout: &timeout})
		select {
		case <-g.events:
		case <-time.After(5 * time.Second):
		}
		if g.hijack != nil {
			g.hijack.Close()
		}
		if g.holdConn != nil {
			g.holdConn.Close()
		}
		g.stopErr = g.remove(rctx)
	})
	return g.stopErr
}

func (g *Gateway) remove(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	var firstErr error
	if g.id != "" {
		if err := removeContainer(rctx, g.cli, g.id); err != nil {
			firstErr = fmt.Errorf("cannot remove the egress gateway: %s", oneLine(err))
		}
	}
	if g.holder != "" {
		if err := removeContainer(rctx, g.cli, g.holder); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("cannot remove the cage network's holder: %s", oneLine(err))
		}
	}
	if g.netID != "" {
		if err := g.cli.NetworkRemove(rctx, g.netID); err != nil && !cerrdefs.IsNotFound(err) && firstErr == nil {
			firstErr = fmt.Errorf("cannot remove the cage's network %s: %s", g.netName, oneLine(err))
		}
	}
	return firstErr
}

// removeContainer removes a container, or waits for the engine's own
// removal of it (a spare's containers are AutoRemove: the engine removes
// them as they exit).
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

// reapNetworks removes the egress networks whose owner is gone (after Reap
// removed their containers).
func reapNetworks(ctx context.Context, cli *client.Client) ([]string, error) {
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelEgress+"=1"))})
	if err != nil {
		return nil, fmt.Errorf("cannot list networks: %s", oneLine(err))
	}
	var removed []string
	var firstErr error
	me, _ := os.Hostname()
	for _, n := range nets {
		o := ownerFromLabels(n.Labels)
		if n.Labels[LabelSpare] != "" {
			o = spareMaker(n.Labels)
			// A spare's network outlives its maker, and serves nobody
			// once no container is on it: one a minute old (its spare
			// made) with none goes, whoever made it on this machine.
			if o.Host != me || o.State() != OwnerGone && time.Since(n.Created) < time.Minute || spareNetworkInUse(ctx, cli, n.ID) {
				continue
			}
		} else if o.State() != OwnerGone {
			continue
		}
		if err := cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("cannot remove orphaned network %s: %s", n.Name, oneLine(err))
			}
			continue
		}
		removed = append(removed, n.Name)
	}
	return removed, firstErr
}

// EgressRefusal is the one stderr line for a refused attempt: the host, and
// the flag that would allow it.
func EgressRefusal(name string, e egress.Event) string {
	host, what, flag := EgressAllowing(e)
	if host == "" {
		return fmt.Sprintf("mcpcage: egress: %q tried a connection to port %d that names no host; refused (%s)", name, e.Port, printable(e.Reason, 200))
	}
	return fmt.Sprintf("mcpcage: egress: refused %q's connection to %s (%s); allow it with %s", name, what, printable(e.Reason, 200), flag)
}

// EgressAllowing reads a refused attempt: the host it named ("" for none),
// what it tried (the host, with the port when it came that far), and the
// flag that would allow it ("--allow-host HOST[:PORT]", or
// --allow-private-addresses for an allowed name at a private address).
func EgressAllowing(e egress.Event) (host, what, flag string) {
	if h, err := egress.NormalName(e.Host); err == nil {
		host = h
	}
	if host == "" {
		return "", "", ""
	}
	flag = "--allow-host " + host
	if e.Port != 0 && e.Port != egress.DefaultPort {
		flag += ":" + strconv.Itoa(e.Port)
	}
	if strings.Contains(e.Reason, "private address") {
		flag = "--allow-private-addresses"
	}
	what = host
	if e.Via != "dns" {
		what += ":" + strconv.Itoa(e.Port)
	}
	return host, what, flag
}

// printable keeps gateway text to one printable line: its errors may quote
// what the cage sent.
func printable(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	return untrusted.Line(s)
}
