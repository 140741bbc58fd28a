package cage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
	"github.com/mcpcage/mcpcage/internal/harden"
)

var (
	probeOnce  sync.Once
	probeImage string
	probeErr   error
)

// dockerAndProbe connects to the engine and builds the escape probe's image
// once per test binary.
func dockerAndProbe(t *testing.T) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	cli, err := Connect(ctx)
	if err != nil {
		t.Fatalf("these tests need the Docker engine: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	probeOnce.Do(func() { probeImage, probeErr = cagetest.BuildProbeImage(ctx, cli) })
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return cli, probeImage
}

// probeSession starts the probe in a cage (weakened by tweak, for control
// cases) and connects the official MCP client to it.
type probeSession struct {
	t    *testing.T
	cage *Cage
	cs   *mcp.ClientSession
	errs *lockedBuffer
}

func startProbe(t *testing.T, cli *client.Client, spec Spec, tweak func(*container.Config, *container.HostConfig)) *probeSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if spec.Name == "" {
		spec.Name = "escape-probe"
	}
	// The escape suite runs under each runtime the tests are given:
	// MCPCAGE_TEST_RUNTIME=runsc runs it under gVisor (make escape-runsc).
	if spec.Runtime == "" {
		spec.Runtime = os.Getenv("MCPCAGE_TEST_RUNTIME")
		spec.GVisor = gvisor()
	}
	// The server's stdio on named pipes, as `mcpcage run` gives it where
	// the engine shares them (stdioWay); gVisor keeps the attach stream.
	if !spec.GVisor && spec.Stdio == nil {
		bin, err := cagetest.StaticMcpcage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		spec.Stdio = &CageStdio{Binary: bin, Dir: t.TempDir()}
	}
	c, err := start(ctx, cli, spec, tweak)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	errs := &lockedBuffer{}
	go io.Copy(errs, c.Stderr())
	client := mcp.NewClient(&mcp.Implementation{Name: "escape-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(c.Stdout()), Writer: c.Stdin()}, nil)
	if err != nil {
		t.Fatalf("connect: %v (server stderr: %s)", err, errs.String())
	}
	t.Cleanup(func() { cs.Close() })
	return &probeSession{t: t, cage: c, cs: cs, errs: errs}
}

type probeResult struct {
	Check   string `json:"check"`
	Escaped bool   `json:"escaped"`
	Detail  string `json:"detail"`
}

func (p *probeSession) probe(check, target string) probeResult {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"check": check, "target": target}})
	if err != nil {
		p.t.Fatalf("probe %s: %v (server stderr: %s)", check, err, p.errs.String())
	}
	if len(res.Content) != 1 {
		p.t.Fatalf("probe %s: %d content items", check, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		p.t.Fatalf("probe %s: content is %T", check, res.Content[0])
	}
	var r probeResult
	if err := json.Unmarshal([]byte(tc.Text), &r); err != nil {
		p.t.Fatalf("probe %s: %v in %q", check, err, tc.Text)
	}
	if strings.HasPrefix(r.Detail, "unknown check") {
		p.t.Fatalf("the probe does not know %q", check)
	}
	return r
}

// held asserts the probe failed to escape.
func (p *probeSession) held(check, target string) probeResult {
	p.t.Helper()
	r := p.probe(check, target)
	if r.Escaped {
		p.t.Errorf("ESCAPE: %s %s got out of the cage: %s", check, target, r.Detail)
	} else {
		p.t.Logf("held: %s %s: %s", check, target, r.Detail)
	}
	return r
}

// escapes asserts the probe succeeds in a control cage, proving the probe
// itself can detect the way out.
func (p *probeSession) escapes(check, target string) {
	p.t.Helper()
	r := p.probe(check, target)
	switch {
	case r.Escaped:
	case gvisor():
		// gVisor holds it too (no host network, no host Unix sockets, no
		// raw sockets): the control shows nothing under runsc.
		p.t.Logf("control under gVisor: %s %s is held by gVisor itself: %s", check, target, r.Detail)
	default:
		p.t.Errorf("control: %s %s should work without the hardening, but: %s", check, target, r.Detail)
	}
}

// heldOrDown asserts the probe does not get out, counting a cage that went
// down on the way (gVisor past its limits) as held.
func (p *probeSession) heldOrDown(check, target string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"check": check, "target": target}})
	if err != nil {
		p.t.Logf("held: %s %s: the cage went down (%v)", check, target, err)
		// gVisor tears a sandbox past its limits down slowly (on a loaded
		// machine past Stop's 20 s, which then says it could not remove
		// it and the next start reaps it): removed here with more time.
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		if err := p.cage.cli.ContainerRemove(rctx, p.cage.id, container.RemoveOptions{Force: true}); err != nil {
			p.t.Errorf("removing the sandbox that went down: %v", err)
		}
		p.t.Logf("removed in %s", time.Since(start).Round(time.Millisecond))
		return
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok && strings.Contains(tc.Text, `"escaped":true`) {
			p.t.Errorf("ESCAPE: %s %s got out of the cage: %s", check, target, tc.Text)
		}
	}
}

// gvisor says whether the suite runs under gVisor (MCPCAGE_TEST_RUNTIME=runsc).
func gvisor() bool { return os.Getenv("MCPCAGE_TEST_RUNTIME") == "runsc" }

// looksEmpty says whether a masked folder shows nothing: no entries, or
// (gVisor's tmpfs over it) no permission to list it.
func looksEmpty(detail string) bool {
	return detail == "0 entries" || gvisor() && strings.Contains(detail, "permission denied")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func bridgeGateway(t *testing.T, cli *client.Client) string {
	t.Helper()
	gw, err := cagetest.BridgeGateway(context.Background(), cli)
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// listeners opens a TCP listener on the host's loopback and on the bridge
// gateway, and a UDP "DNS server" on the gateway that answers anything.
func listeners(t *testing.T, gw string) (loTCP, gwTCP, gwUDP string) {
	t.Helper()
	accept := func(l net.Listener) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lo.Close() })
	go accept(lo)
	g, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	go accept(g)
	u, err := net.ListenPacket("udp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := u.ReadFrom(buf)
			if err != nil {
				return
			}
			if n >= 12 {
				resp := append([]byte(nil), buf[:n]...)
				resp[2] |= 0x80 // a response, no answers
				u.WriteTo(resp, from)
			}
		}
	}()
	return lo.Addr().String(), g.Addr().String(), u.LocalAddr().String()
}

func TestEscapeNetwork(t *testing.T) {
	cli, img := dockerAndProbe(t)
	gw := bridgeGateway(t, cli)
	loTCP, gwTCP, gwUDP := listeners(t, gw)

	caged := startProbe(t, cli, Spec{Image: img}, nil)
	caged.held("ifaces", "")
	caged.held("udp", gwUDP)
	caged.held("tcp", gwTCP)
	caged.held("tcp", loTCP)

	// Control: the same probes with the network opened as --allow-net does.
	open := startProbe(t, cli, Spec{Image: img, AllowNet: true}, nil)
	open.escapes("ifaces", "")
	open.escapes("udp", gwUDP)
	open.escapes("tcp", gwTCP)
	// The host's loopback is the host's own: only sharing its network
	// namespace reaches it, which mcpcage never does.
	host := startProbe(t, cli, Spec{Image: img}, func(_ *container.Config, hc *container.HostConfig) { hc.NetworkMode = "host" })
	host.escapes("tcp", loTCP)
}

func TestEscapeFiles(t *testing.T) {
	cli, img := dockerAndProbe(t)
	// A folder of the host that is not mounted, and the user's home.
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "id_rsa"), []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	// A folder mounted read-only, writable by anyone on the host.
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o777); err != nil {
		t.Fatal(err)
	}
	mounts := []Mount{{Source: ro, Target: ro}}

	caged := startProbe(t, cli, Spec{Image: img, Mounts: mounts, TmpSize: 8 << 20}, nil)
	caged.held("read", filepath.Join(secret, "id_rsa"))
	caged.held("read", userHome)
	caged.held("read", "/etc/shadow")
	caged.held("socket", "")
	if r := caged.held("write", "/data/x"); !strings.Contains(r.Detail, "read-only file system") {
		t.Errorf("writing the image's disk should fail for being read-only, got %q", r.Detail)
	}
	caged.held("write", "/probe")
	if r := caged.held("write", filepath.Join(ro, "x")); !strings.Contains(r.Detail, "read-only file system") {
		t.Errorf("writing a read-only mount should fail for being read-only, got %q", r.Detail)
	}
	if r := caged.held("fill", "/tmp/fill:"+fmt.Sprint(16<<20)); !strings.Contains(r.Detail, "no space left") {
		t.Errorf("/tmp should fill up at its size, got %q", r.Detail)
	}
	if _, err := os.Stat(filepath.Join(ro, "x")); err == nil {
		t.Error("a file appeared in the read-only mount")
	}

	// Control: the rootfs writable, the mount :rw, the unmounted folder
	// mounted, a larger /tmp: each probe then works.
	open := startProbe(t, cli, Spec{Image: img, Mounts: []Mount{{Source: ro, Target: ro, Writable: true}, {Source: secret, Target: secret}}, TmpSize: 32 << 20},
		func(_ *container.Config, hc *container.HostConfig) { hc.ReadonlyRootfs = false })
	open.escapes("read", filepath.Join(secret, "id_rsa"))
	open.escapes("write", "/data/x")
	open.escapes("write", filepath.Join(ro, "x"))
	open.escapes("fill", "/tmp/fill:"+fmt.Sprint(16<<20))

	// A mounted folder that holds mcpcage's own state: the state is masked.
	parent := t.TempDir()
	state := filepath.Join(parent, ".mcpcage")
	if err := os.MkdirAll(filepath.Join(state, "servers", "other", "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(state, "servers", "other", "home", "token")
	if err := os.WriteFile(stateFile, []byte("another server's secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(parent, "notes.txt"), []byte("visible"), 0o644)
	pm := []Mount{{Source: parent, Target: parent}}
	masks := MasksFor(pm, state)
	if len(masks) != 1 || masks[0] != state {
		t.Fatalf("MasksFor = %q", masks)
	}
	masked := startProbe(t, cli, Spec{Image: img, Mounts: pm, Masks: masks}, nil)
	masked.held("read", stateFile)
	if r := masked.probe("read", state); !looksEmpty(r.Detail) {
		t.Errorf("the masked state folder should look empty: %s", r.Detail)
	}
	if r := masked.probe("read", filepath.Join(parent, "notes.txt")); !r.Escaped {
		t.Errorf("the rest of the mounted folder should stay visible: %s", r.Detail)
	}
	masked.held("write", filepath.Join(state, "x"))
	// Control: without the mask the state shows through.
	unmasked := startProbe(t, cli, Spec{Image: img, Mounts: pm}, nil)
	unmasked.escapes("read", stateFile)
}

// TestEscapeSocketUnderMount: a mounted folder that holds a Docker socket
// (Docker Desktop's ~/.docker/run, Colima's ~/.colima/default) shows the
// socket's folder empty, and the socket's folder itself cannot be mounted.
func TestEscapeSocketUnderMount(t *testing.T) {
	cli, img := dockerAndProbe(t)
	home := t.TempDir()
	sockDir := filepath.Join(home, ".docker", "run")
	if err := os.MkdirAll(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(sockDir, "docker.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("HOME", home)
	dirs := DockerSocketDirs()
	found := false
	for _, d := range dirs {
		found = found || d == sockDir
	}
	if !found {
		t.Fatalf("DockerSocketDirs() = %q, want %s among them", dirs, sockDir)
	}
	if _, err := ResolveMount(sockDir, false, ""); err == nil || !strings.Contains(err.Error(), "Docker socket") {
		t.Errorf("mounting the socket's folder: %v", err)
	}
	m, err := ResolveMount(home, false, "")
	if err != nil {
		t.Fatal(err)
	}
	ms := []Mount{m}
	masked := startProbe(t, cli, Spec{Image: img, Mounts: ms, Masks: MasksFor(ms, dirs...)}, nil)
	if r := masked.probe("read", sockDir); !looksEmpty(r.Detail) {
		t.Errorf("the socket's folder should look empty: %s", r.Detail)
	}
	// Control: unmasked, the socket is there.
	unmasked := startProbe(t, cli, Spec{Image: img, Mounts: ms}, nil)
	if r := unmasked.probe("read", sockDir); r.Detail != "1 entries" {
		t.Errorf("control: the socket's folder should hold the socket: %s", r.Detail)
	}
}

func TestEscapePrivileges(t *testing.T) {
	cli, img := dockerAndProbe(t)
	caged := startProbe(t, cli, Spec{Image: img}, nil)
	if r := caged.held("root", ""); !strings.Contains(r.Detail, "uid "+strings.Split(User(), ":")[0]) {
		t.Errorf("the image says USER 0 but the server should run as %s: %s", User(), r.Detail)
	}
	caged.held("caps", "")
	caged.held("chown", "")
	if r := caged.probe("mknod", ""); r.Escaped && !gvisor() {
		t.Errorf("ESCAPE: mknod got out of the cage: %s", r.Detail)
	} else if r.Escaped {
		// gVisor lets the node be made and opened: it is a device of
		// gVisor's own kernel, not the host's.
		t.Logf("under gVisor: %s (gVisor's own device)", r.Detail)
	}
	caged.held("setuid", "")
	caged.held("mount", "")
	caged.held("rawsock", "")
	caged.held("suid", "/probe-suid")

	// Control 1: without no-new-privileges the setuid-root binary gives euid 0.
	nonnp := startProbe(t, cli, Spec{Image: img}, func(_ *container.Config, hc *container.HostConfig) { hc.SecurityOpt = nil })
	nonnp.escapes("suid", "/probe-suid")
	// Control 2: as the image's user (root) with Docker's default
	// capabilities, the privileged operations work.
	root := startProbe(t, cli, Spec{Image: img}, func(cfg *container.Config, hc *container.HostConfig) {
		cfg.User = ""
		hc.CapDrop = nil
	})
	root.escapes("root", "")
	root.escapes("caps", "")
	root.escapes("chown", "")
	root.escapes("mknod", "")
	root.escapes("rawsock", "")
	// Control 3: with CAP_SYS_ADMIN, mount works (the default seccomp
	// profile allows mount(2) to that capability; the dropped capability is
	// what stops it).
	admin := startProbe(t, cli, Spec{Image: img}, func(cfg *container.Config, hc *container.HostConfig) {
		cfg.User = ""
		hc.CapDrop = nil
		hc.CapAdd = []string{"SYS_ADMIN"}
	})
	admin.escapes("mount", "")
}

func TestEscapeResources(t *testing.T) {
	cli, img := dockerAndProbe(t)
	if gvisor() {
		// gVisor's own threads and memory (its kernel, in the sandbox's
		// processes) count against the limits: it needs more room to
		// start, and a probe past a limit takes the sandbox down with it.
		for _, c := range [][2]string{{"fork", "400"}, {"memory", "256"}} {
			caged := startProbe(t, cli, Spec{Image: img, Pids: 160, Memory: 96 << 20}, nil)
			caged.heldOrDown(c[0], c[1])
		}
	} else {
		caged := startProbe(t, cli, Spec{Image: img, Pids: 48, Memory: 96 << 20}, nil)
		caged.held("fork", "60")
		caged.held("memory", "256")
	}
	if gvisor() {
		// Not under gVisor: the controls show nothing there (escapes), and
		// its sandbox that touched 256 MiB was seen to take more than
		// Stop's 20 s to be removed on a loaded machine.
		return
	}
	// Control: with room for them, the same fork and memory probes work.
	open := startProbe(t, cli, Spec{Image: img, Pids: 4096, Memory: 1 << 30}, nil)
	open.escapes("fork", "60")
	open.escapes("memory", "256")
}

// TestOOMKilled: a server that outgrows --memory is killed by the kernel, and
// the cage says so (mcpcage run turns it into a clear error).
func TestOOMKilled(t *testing.T) {
	cli, img := dockerAndProbe(t)
	ctx := context.Background()
	c, err := Start(ctx, cli, Spec{Name: "oom-probe", Image: img, Cmd: []string{"eat", "256"}, Memory: 96 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	go io.Copy(io.Discard, c.Stdout())
	go io.Copy(io.Discard, c.Stderr())
	code, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if code != 137 || !c.OOMKilled() {
		t.Errorf("exit %d, OOMKilled %v; want 137, true", code, c.OOMKilled())
	}

	// Control: with room, the same server ends normally.
	c2, err := Start(ctx, cli, Spec{Name: "oom-probe", Image: img, Cmd: []string{"eat", "64"}, Memory: 512 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Stop(ctx)
	go io.Copy(io.Discard, c2.Stdout())
	go io.Copy(io.Discard, c2.Stderr())
	if code, _ := c2.Wait(); code != 0 || c2.OOMKilled() {
		t.Errorf("control: exit %d, OOMKilled %v; want 0, false", code, c2.OOMKilled())
	}
}

// hostSocket listens on a Unix socket at path, as a host daemon (tmux,
// ssh-agent) would, greeting every connection with hello. The socket and
// its folder belong to the cage's user: the cage runs as the user's own uid,
// so file modes are no barrier, and only the cage itself may be.
func hostSocket(t *testing.T, path, hello string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	giveToCage(t, filepath.Dir(path), path)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(hello))
			c.Close()
		}
	}()
}

// giveToCage makes paths the cage's user's: the cage runs as the user's
// own uid, so file modes are no barrier, and only the cage itself may be.
func giveToCage(t *testing.T, paths ...string) {
	t.Helper()
	var uid, gid int
	fmt.Sscanf(User(), "%d:%d", &uid, &gid)
	for _, p := range paths {
		if err := os.Lchown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

// hostDatagram listens on a Unix datagram socket at path, as journald,
// syslog or a notify socket does, and sends what reaches it on got. The
// socket and its folder belong to the cage's user, as in hostSocket.
func hostDatagram(t *testing.T, path string, got chan<- string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	giveToCage(t, filepath.Dir(path), path)
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			select {
			case got <- string(buf[:n]):
			default:
			}
		}
	}()
}

// TestEscapeUnixSocket: a tmux-like and an ssh-agent-like socket of the
// host, in a folder mounted read-only and in one mounted :rw, cannot be
// connected to, and a datagram socket there (journald, syslog, notify)
// cannot be written to from a SOCK_DGRAM socketpair; a stream socketpair
// still works.
func TestEscapeUnixSocket(t *testing.T) {
	cli, img := dockerAndProbe(t)
	var socks, grams []string
	var mounts []Mount
	heard := make(chan string, 16)
	for _, rw := range []bool{false, true} {
		dir := t.TempDir()
		// Writable by the cage's user when mounted :rw (else the mount
		// is refused before the start, CheckAccess).
		mode := os.FileMode(0o755)
		if rw {
			mode = 0o777
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		tmux := filepath.Join(dir, "tmux-1000", "default")
		agent := filepath.Join(dir, "ssh-XXXXq1w2e3", "agent.4242")
		hostSocket(t, tmux, "tmux")
		hostSocket(t, agent, "ssh-agent")
		journal := filepath.Join(dir, "journal", "socket")
		hostDatagram(t, journal, heard)
		socks = append(socks, tmux, agent)
		grams = append(grams, journal)
		mounts = append(mounts, Mount{Source: dir, Target: dir, Writable: rw})
	}
	caged := startProbe(t, cli, Spec{Image: img, Mounts: mounts}, nil)
	for _, g := range grams {
		if r := caged.held("dgram", g); !strings.Contains(r.Detail, "socketpair: operation not permitted") {
			t.Errorf("a datagram to %s should fail at socketpair(2) with EPERM, got %q", g, r.Detail)
		}
	}
	select {
	case m := <-heard:
		t.Errorf("a host datagram socket received %q from the cage", m)
	default:
	}
	for _, s := range socks {
		// Refused by seccomp (EPERM), not by a file mode.
		if r := caged.held("unix", s); !strings.Contains(r.Detail, "socket: operation not permitted") {
			t.Errorf("connecting to %s should fail at socket(2) with EPERM, got %q", s, r.Detail)
		}
	}
	if r := caged.probe("socketpair", ""); !r.Escaped {
		t.Errorf("socketpair should keep working in the cage: %s", r.Detail)
	}

	// Control: the same cage under the engine's plain default profile
	// reaches every one of them.
	plain := startProbe(t, cli, Spec{Image: img, Mounts: mounts}, func(_ *container.Config, hc *container.HostConfig) {
		hc.SecurityOpt = []string{"no-new-privileges:true"}
	})
	for _, s := range socks {
		plain.escapes("unix", s)
	}
	for _, g := range grams {
		plain.escapes("dgram", g)
		if gvisor() {
			continue // gVisor reaches no host socket at all
		}
		select {
		case <-heard:
		case <-time.After(5 * time.Second):
			t.Errorf("control: the host socket %s heard nothing", g)
		}
	}
}

// TestCageScratchTmp: an image whose own /tmp is 0755 and root's (made from
// scratch) still gets a /tmp the cage's user can write.
func TestCageScratchTmp(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	img, err := cagetest.BuildScratchTmpImage(context.Background(), cli)
	if err != nil {
		t.Fatal(err)
	}
	p := startProbe(t, cli, Spec{Image: img}, nil)
	if r := p.probe("write", "/tmp/x"); !r.Escaped {
		t.Errorf("/tmp of a scratch image is not writable by the cage's user: %s", r.Detail)
	}
}

// TestEscapeWritablePlaces: what the server can write is exactly the places
// docs/cage.md lists (HOME, /tmp, /dev/shm, /dev/mqueue, :rw mounts), and
// /dev/shm is small (harden.ShmSize, charged to --memory like /tmp); the host's
// kernel command line is hidden.
func TestEscapeWritablePlaces(t *testing.T) {
	cli, img := dockerAndProbe(t)
	home, rw, ro := t.TempDir(), t.TempDir(), t.TempDir()
	var uid, gid int
	fmt.Sscanf(User(), "%d:%d", &uid, &gid)
	for _, d := range []string{home, rw, ro} {
		os.Chown(d, uid, gid)
	}
	p := startProbe(t, cli, Spec{Image: img, Home: home, Mounts: []Mount{{Source: rw, Target: rw, Writable: true}, {Source: ro, Target: ro}}}, nil)
	r := p.probe("writable", "")
	allowed := map[string]bool{"/tmp": true, "/dev/shm": true, "/dev/mqueue": true, HomeInContainer: true, rw: true}
	for _, w := range strings.Fields(r.Detail) {
		if !allowed[w] {
			t.Errorf("ESCAPE: the server can write %s, which docs/cage.md does not list", w)
		}
	}
	for _, w := range []string{"/tmp", HomeInContainer, rw} {
		if !strings.Contains(" "+r.Detail+" ", " "+w+" ") {
			t.Errorf("%s should be writable: %s", w, r.Detail)
		}
	}
	if r := p.held("fill", "/dev/shm/f:"+fmt.Sprint(8<<20)); !strings.Contains(r.Detail, "no space left") {
		t.Errorf("/dev/shm should fill up at %d bytes: %s", harden.ShmSize, r.Detail)
	}
	// Docker masks it (0 bytes); gVisor shows a command line of its own.
	host, _ := os.ReadFile("/proc/cmdline")
	if r := p.probe("read", "/proc/cmdline"); r.Escaped && r.Detail == fmt.Sprintf("read %d bytes", len(host)) {
		t.Errorf("ESCAPE: the host's kernel command line is visible: %s", r.Detail)
	}
	// Control: Docker's default /dev/shm (64 MiB) takes the same 8 MiB.
	open := startProbe(t, cli, Spec{Image: img}, func(_ *container.Config, hc *container.HostConfig) { hc.ShmSize = 0 })
	open.escapes("fill", "/dev/shm/f:"+fmt.Sprint(8<<20))
}

// TestEscapeStdioFolder: the folder of the stdio pipes is the cage's
// stdin and stdout and nothing more: read-only (nothing can be planted
// beside the pipes), holding the two pipes alone, and mcpcage's state
// around it is not in the cage.
//
// Under gVisor the stdio is the attach stream (stdioWay): there is no such
// folder in the cage at all.
func TestEscapeStdioFolder(t *testing.T) {
	cli, img := dockerAndProbe(t)
	p := startProbe(t, cli, Spec{Image: img}, nil)
	if gvisor() {
		if p.cage.pipes != nil {
			t.Fatal("under gVisor the probe is on pipes")
		}
		if r := p.probe("read", StdioDir); r.Escaped {
			t.Errorf("under gVisor the cage has a stdio folder: %s", r.Detail)
		}
		return
	}
	if p.cage.pipes == nil {
		t.Fatal("the probe is not on pipes")
	}
	if r := p.probe("write", StdioDir+"/planted"); r.Escaped {
		t.Errorf("wrote into the stdio folder: %s", r.Detail)
	}
	if r := p.probe("read", StdioDir); r.Detail != "2 entries" {
		t.Errorf("the stdio folder holds %s, want the two pipes", r.Detail)
	}
	if r := p.probe("read", filepath.Dir(p.cage.pipes.dir)); r.Escaped {
		t.Errorf("the host's folder of the pipes is in the cage: %s", r.Detail)
	}
}
