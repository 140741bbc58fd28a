package cage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
	"github.com/mcpcage/mcpcage/internal/egress"
)

// staticGateway builds mcpcage itself with CGO_ENABLED=0 (the test binary
// is not static) and points EnvGatewayBinary at it.
func staticGateway(t *testing.T) {
	t.Helper()
	gatewayBin, err := cagetest.StaticMcpcage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvGatewayBinary, gatewayBin)
}

// testInternet is the egress tests' own internet: host "a" answers to
// api.allowed.test and a.wild.test, host "b" to api.denied.test and
// wild.test.
func testInternet(t *testing.T, cli *client.Client) *cagetest.Internet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	in, err := cagetest.NewInternet(ctx, cli, map[string][]string{
		"a": {"api.allowed.test", "a.wild.test"},
		"b": {"api.denied.test", "wild.test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in
}

type eventLog struct {
	mu sync.Mutex
	ev []egress.Event
}

func (l *eventLog) add(e egress.Event) { l.mu.Lock(); l.ev = append(l.ev, e); l.mu.Unlock() }
func (l *eventLog) all() []egress.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]egress.Event(nil), l.ev...)
}

// cagedBehindGateway starts a gateway for policy and the probe on its
// network, trusting the test's CA through SSL_CERT_FILE (as the CA bundle
// reaches a real server).
func cagedBehindGateway(t *testing.T, cli *client.Client, _ string, in *cagetest.Internet, pol egress.Policy) (*probeSession, *Gateway, *eventLog, string) {
	t.Helper()
	staticGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ev := &eventLog{}
	session := NewSession()
	gw, err := NewGateway(EgressSpec{Policy: pol, Upstream: in.Network, Session: session, Name: "egress-probe", Dir: t.TempDir(), Events: ev.add, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Stop(context.Background()) })
	if err := gw.Start(ctx, cli); err != nil {
		t.Fatal(err)
	}
	p := probeBehind(t, cli, in, gw, session)
	gw.Launch(ctx)
	if err := gw.Wait(); err != nil {
		t.Fatal(err)
	}
	return p, gw, ev, session
}

// probeBehind starts the probe behind gw (Gateway.Cage: the shim in front of
// it), as cagedBehindGateway does.
func probeBehind(t *testing.T, cli *client.Client, in *cagetest.Internet, gw *Gateway, session string) *probeSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Built again (a no-op when unchanged): tests of other checkouts on
	// the same engine retag the probe image and drop the old one.
	img, err := cagetest.BuildProbeImage(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, in.CA, 0o644); err != nil {
		t.Fatal(err)
	}
	return startProbe(t, cli, Spec{
		Name: "egress-probe", Image: img, Session: session,
		Egress: gw.Cage(),
		Env:    append(gw.Env(), "SSL_CERT_FILE=/etc/mcpcage/ca/test.pem"),
		Mounts: []Mount{{Source: ca, Target: "/etc/mcpcage/ca/test.pem"}},
	}, nil)
}

// byNamePolicy is TestEgressByName's policy.
var byNamePolicy = []string{"api.allowed.test", "api.allowed.test:7000", "*.wild.test"}

func TestEgressByName(t *testing.T) {
	cli, img := dockerAndProbe(t)
	in := testInternet(t, cli)
	pol, err := egress.ParsePolicy(byNamePolicy, true)
	if err != nil {
		t.Fatal(err)
	}
	p, gw, ev, _ := cagedBehindGateway(t, cli, img, in, pol)
	checkByName(t, cli, in, p, gw, ev)
}

// checkByName: behind gw, the probe reaches what pol allows and nothing
// else, each attempt is an event, and stopping leaves nothing of the
// gateway, its pipes or the cage.
func checkByName(t *testing.T, cli *client.Client, in *cagetest.Internet, p *probeSession, gw *Gateway, ev *eventLog) {
	t.Helper()
	// The shim's address in the cage, and the gateway's own on the
	// upstream network.
	shimAddr := ShimAddr
	gi, err := cli.ContainerInspect(context.Background(), gw.id)
	if err != nil || gi.NetworkSettings == nil || gi.NetworkSettings.Networks[in.Network] == nil {
		t.Fatalf("the gateway is not on the upstream network: %v", err)
	}
	gwAddr := gi.NetworkSettings.Networks[in.Network].IPAddress
	gwID, pipes := gw.id, gw.pipes

	// What the server needs works, with and without HTTPS_PROXY, over
	// HTTPS and raw TCP, and a wildcard covers a subdomain.
	if r := p.probe("https", "https://api.allowed.test/"); !r.Escaped || !strings.Contains(r.Detail, `"host":"api.allowed.test"`) {
		t.Errorf("https to the allowed host: %s", r.Detail)
	}
	if r := p.probe("httpsproxy", "https://api.allowed.test/x"); !r.Escaped || !strings.Contains(r.Detail, `"path":"/x"`) {
		t.Errorf("https through HTTPS_PROXY to the allowed host: %s", r.Detail)
	}
	if r := p.probe("raw", "api.allowed.test:7000"); !r.Escaped || r.Detail != "hello from api.allowed.test" {
		t.Errorf("raw TCP to the allowed host: %s", r.Detail)
	}
	if r := p.probe("https", "https://a.wild.test/"); !r.Escaped {
		t.Errorf("https to a subdomain of the wildcard: %s", r.Detail)
	}
	// Nothing else does.
	p.held("dns", "api.denied.test")
	p.held("dns", "wild.test")
	p.held("dns", "example.com")
	p.held("https", "https://api.denied.test/")
	p.held("httpsproxy", "https://api.denied.test/")
	p.held("sni", shimAddr+":443/api.denied.test")
	p.held("raw", "api.allowed.test:443")
	for _, a := range in.Addrs {
		p.held("tcp", net.JoinHostPort(a, "443"))
		p.held("tcp", net.JoinHostPort(a, "7000"))
	}
	for _, port := range []string{"22", "80", "443", "2375", "3128", "8080"} {
		p.held("tcp", net.JoinHostPort(gwAddr, port))
	}
	for _, port := range []string{"22", "80", "2375", "8080"} {
		p.held("tcp", net.JoinHostPort(shimAddr, port))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p.held("tcp", ln.Addr().String())
	p.held("socket", "")
	// No interface but loopback: the cage has no network at all.
	p.held("ifaces", "")

	// One event per attempt, in order, with the verdict and the bytes.
	if err := p.cage.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := gw.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []struct{ host, verdict, via string }{
		{"api.allowed.test", "allowed", "sni"},
		{"api.allowed.test", "allowed", "connect"},
		{"api.allowed.test", "allowed", "port"},
		{"a.wild.test", "allowed", "sni"},
		{"api.denied.test", "refused", "dns"},
		{"wild.test", "refused", "dns"},
		{"example.com", "refused", "dns"},
		{"api.denied.test", "refused", "connect"},
		{"api.denied.test", "refused", "sni"},
		// 443 is shared with the wildcard, so a protocol that names no
		// host there has no host to go to.
		{"", "refused", "port"},
	}
	// An allowed connection is reported when it is allowed, before a
	// byte passes (phase open), and when it ends: the opens are checked,
	// then set aside.
	var got, opens []egress.Event
	for _, e := range ev.all() {
		if e.Phase == "open" {
			opens = append(opens, e)
			continue
		}
		got = append(got, e)
	}
	for _, e := range got {
		if e.Verdict == "allowed" && !slices.ContainsFunc(opens, func(o egress.Event) bool { return o.Host == e.Host && o.Via == e.Via && o.Addr == e.Addr }) {
			t.Errorf("an allowed connection has no open report: %+v", e)
		}
	}
	if len(opens) != 4 {
		t.Errorf("%d open reports, want 4: %+v", len(opens), opens)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	// A connection is reported when it closes, which may be just after
	// the next attempt: each wanted event is matched in the order of hosts.
	sort.SliceStable(got, func(i, j int) bool { return order(want, got[i]) < order(want, got[j]) })
	for i, w := range want {
		e := got[i]
		if e.Host != w.host || e.Verdict != w.verdict || e.Via != w.via {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
		if w.verdict == "allowed" && (e.Sent == 0 || e.Received == 0) {
			t.Errorf("event %d has no byte counts: %+v", i, e)
		}
		if w.verdict == "refused" && e.Received != 0 {
			t.Errorf("refused event %d received bytes: %+v", i, e)
		}
	}
	if e := got[2]; e.Sent != 5 || e.Received != int64(len("hello from api.allowed.test\n")+5) {
		t.Errorf("raw TCP byte counts: %+v", e)
	}
	// Nothing of the session is left.
	ctx := context.Background()
	for _, id := range []string{p.cage.ID(), gwID} {
		if _, err := cli.ContainerInspect(ctx, id); !cerrdefs.IsNotFound(err) {
			t.Errorf("left behind: container %s (%v)", id, err)
		}
	}
	if _, err := os.Stat(pipes); !os.IsNotExist(err) {
		t.Errorf("left behind: the pipes' folder %s (%v)", pipes, err)
	}
}

// order is the place of e among want, by host, verdict and via.
func order(want []struct{ host, verdict, via string }, e egress.Event) int {
	for i, w := range want {
		if w.host == e.Host && w.verdict == e.Verdict && w.via == e.Via {
			return i
		}
	}
	return len(want)
}

// Without --allow-private-addresses, an allowed name that resolves to a
// private address (every host of the test's internet) is refused: the same
// check stops DNS rebinding to internal services.
func TestEgressRefusesPrivateAddresses(t *testing.T) {
	cli, img := dockerAndProbe(t)
	in := testInternet(t, cli)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, false)
	p, gw, ev, _ := cagedBehindGateway(t, cli, img, in, pol)
	p.held("https", "https://api.allowed.test/")
	p.cage.Stop(context.Background())
	gw.Stop(context.Background())
	got := ev.all()
	if len(got) != 1 || got[0].Verdict != "refused" || !strings.Contains(got[0].Reason, "private address "+in.Addrs["a"]) {
		t.Fatalf("events: %+v", got)
	}
	line := egress.Refusal("srv", got[0])
	if !strings.Contains(line, "api.allowed.test:443") || !strings.HasSuffix(line, "allow it with --allow-private-addresses") {
		t.Errorf("refusal line: %s", line)
	}
}

// The gateway image's tag comes from the binary's Go build ID (a hash of
// its content, read without hashing 17 MB at each start): the same as `go
// tool buildid` reads, another build another tag, and a file with no build
// ID hashed whole.
func TestGatewayRefFromBuildID(t *testing.T) {
	bin, err := cagetest.StaticMcpcage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := gatewayRef(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("go-buildid:" + strings.TrimSpace(string(out))))
	if want := "mcpcage/egress:" + hex.EncodeToString(sum[:])[:16]; ref != want {
		t.Fatalf("ref %s, want %s (from go tool buildid)", ref, want)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	oref, err := gatewayRef(other)
	sum = sha256.Sum256([]byte("#!/bin/sh\n"))
	if err != nil || oref != "mcpcage/egress:"+hex.EncodeToString(sum[:])[:16] {
		t.Fatalf("a file with no build ID: %s, %v", oref, err)
	}
}

// A gateway whose container cannot start (here: its upstream network went
// away after the checks) says so in Wait, and Stop leaves nothing: not the
// container, not the pipes. (Up then stops the cage and says why.)
func TestGatewayLaunchFails(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	staticGateway(t)
	ctx := context.Background()
	gone, err := cli.NetworkCreate(ctx, "mcpcage-test-gone-"+randomHex(4), network.CreateOptions{Internal: true})
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, false)
	gw, err := NewGateway(EgressSpec{Policy: pol, Upstream: gone.ID, Session: NewSession(), Name: "gone", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(ctx, cli); err != nil {
		t.Fatal(err)
	}
	if err := cli.NetworkRemove(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	gw.Launch(ctx)
	if err := gw.Wait(); err == nil || !strings.Contains(err.Error(), "egress gateway") {
		t.Fatalf("Wait: %v, want the gateway's failure", err)
	}
	pipes := gw.pipes
	if err := gw.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pipes); !os.IsNotExist(err) {
		t.Errorf("left behind: %s (%v)", pipes, err)
	}
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession+"="+gw.spec.Session))})
	if err != nil || len(cs) != 0 {
		t.Errorf("left behind: %d containers (%v)", len(cs), err)
	}
}
