package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
	"github.com/mcpcage/mcpcage/internal/plan"
)

// egressSetup builds a static mcpcage for the gateway (the test binary that
// runs as mcpcage here is not static), the test's own internet, and a CA
// file; it returns the environment that points mcpcage at them.
func egressSetup(t *testing.T, cli *client.Client) (*cagetest.Internet, []string) {
	t.Helper()
	gatewayPath, err := cagetest.StaticMcpcage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	in, err := cagetest.NewInternet(ctx, cli, map[string][]string{"a": {"api.allowed.test"}, "b": {"api.denied.test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	// The test's CA joins the ones this machine already needs (a
	// TLS-intercepting proxy in front of the registry).
	bundle := append([]byte(nil), in.CA...)
	if f := os.Getenv("NODE_EXTRA_CA_CERTS"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			bundle = append(append(bundle, '\n'), b...)
		}
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	return in, []string{cage.EnvGatewayBinary + "=" + gatewayPath, "NODE_EXTRA_CA_CERTS=" + ca, "SSL_CERT_FILE=" + ca, plan.EnvEgressNetwork + "=" + in.Network}
}

const openAPISpec = `{"openapi":"3.0.0","info":{"title":"Status","version":"1.0.0"},
"paths":{"/status":{"get":{"operationId":"getStatus","summary":"The service's status","responses":{"200":{"description":"ok"}}}}}}`

// A real npm server that fronts a remote API (an OpenAPI server, pointed at
// the test's fake API host by env) works caged with --allow-host: its tools
// list, a call reaches the host through the gateway, and the connection is
// on the record.
func TestRunAllowHostNpmServer(t *testing.T) {
	cli := probeEngine(t)
	_, env := egressSetup(t, cli)
	dir := stateDir(t)
	env = append(env, "API_BASE_URL=https://api.allowed.test", "OPENAPI_SPEC_INLINE="+openAPISpec)
	cs, stderr := caged(t, dir, env, "--allow-host", "api.allowed.test", "--allow-private-addresses",
		"--env", "API_BASE_URL", "--env", "OPENAPI_SPEC_INLINE", "--", "npx", "-y", "@ivotoby/openapi-mcp-server@1.16.1")
	names := toolNames(t, cs, stderr)
	if len(names) != 1 {
		t.Fatalf("tools: %v\nstderr:\n%s", names, stderr.String())
	}
	out, isErr := call(t, cs, names[0], map[string]any{})
	if isErr || !strings.Contains(out, `api.allowed.test`) || !strings.Contains(out, `/status`) {
		t.Fatalf("call %s: %q (error %v)\nstderr:\n%s", names[0], out, isErr, stderr.String())
	}
	cs.Close()
	show := exec.Command("mcpcage", "audit", "show", "--kind", "egress")
	show.Env = testEnv(dir)
	b, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("audit show: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "api.allowed.test:443 allowed") {
		t.Errorf("audit show --kind egress:\n%s", b)
	}
	if strings.Contains(stderr.String(), "egress: refused") {
		t.Errorf("a refusal for a server that needs one host:\n%s", stderr.String())
	}
}

// A refused attempt prints one line naming the host and the flag, and is
// an audit record; the session leaves no container or network.
func TestRunAllowHostRefusal(t *testing.T) {
	cli := probeEngine(t)
	_, env := egressSetup(t, cli)
	dir := stateDir(t)
	cs, stderr := caged(t, dir, env, "--allow-host", "api.allowed.test", "--allow-private-addresses", "--name", "egress-probe", "--image", cagetest.ProbeImage)
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.denied.test/"}); !strings.Contains(out, `"escaped":false`) {
		t.Fatalf("the denied host was reached: %s", out)
	}
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.allowed.test/"}); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("the allowed host was not reached: %s\nstderr:\n%s", out, stderr.String())
	}
	cs.Close()
	lines := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "egress: refused") {
			lines++
			if !strings.Contains(l, "api.denied.test") || !strings.HasSuffix(l, "allow it with --allow-host api.denied.test") {
				t.Errorf("refusal line: %s", l)
			}
		}
	}
	if lines != 1 {
		t.Errorf("%d refusal lines, want 1:\n%s", lines, stderr.String())
	}
	show := exec.Command("mcpcage", "audit", "show", "--kind", "egress")
	show.Env = testEnv(dir)
	b, _ := show.CombinedOutput()
	if !strings.Contains(string(b), "api.denied.test:0 refused via=dns") || !strings.Contains(string(b), "api.allowed.test:443 allowed via=sni") {
		t.Errorf("audit show --kind egress:\n%s", b)
	}
}

// ownedBy counts the containers and networks that carry pid's owner label.
func ownedBy(t *testing.T, cli *client.Client, pid int) (int, int) {
	t.Helper()
	f := filters.NewArgs(filters.Arg("label", cage.LabelOwnerPID+"="+strconv.Itoa(pid)))
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(context.Background(), network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs), len(ns)
}

// TestRunAllowHostReaped: a SIGKILLed mcpcage leaves its cage, its gateway
// and the session's pipes; the next start removes all three. No session
// makes a network.
func TestRunAllowHostReaped(t *testing.T) {
	cli := probeEngine(t)
	_, env := egressSetup(t, cli)
	dir := stateDir(t)
	// The session's folder of pipes and its lock.
	pipes := filepath.Join(dir, "mcpcage", "egress", "pipes-*")
	victim := startInitialized(t, testEnv(dir, env...), "run", "--allow-host", "api.allowed.test", "--allow-private-addresses", "--image", cagetest.ProbeImage)
	pid := victim.Process.Pid
	if c, n := ownedBy(t, cli, pid); c != 2 || n != 0 {
		t.Fatalf("running: %d containers and %d networks, want 2 and 0", c, n)
	}
	if m, _ := filepath.Glob(pipes); len(m) != 2 {
		t.Fatalf("running: %v, want one folder of pipes and its lock", m)
	}
	victim.Process.Kill()
	victim.Wait()
	if c, _ := ownedBy(t, cli, pid); c != 2 {
		t.Fatalf("after SIGKILL: %d containers, want the 2 orphans", c)
	}
	next := exec.Command("mcpcage", "run", "--image", cagetest.ProbeImage)
	next.Env = testEnv(dir)
	next.Stdin = strings.NewReader("")
	nextErr := &cageBuffer{}
	next.Stderr = nextErr
	if err := next.Run(); err != nil {
		t.Fatalf("next run: %v\n%s", err, nextErr.String())
	}
	if c, n := ownedBy(t, cli, pid); c != 0 || n != 0 {
		t.Errorf("after the next start: %d containers and %d networks of the killed mcpcage, want none\n%s", c, n, nextErr.String())
	}
	if m, _ := filepath.Glob(pipes); len(m) != 0 {
		t.Errorf("after the next start: %v of the killed mcpcage, want nothing", m)
	}
}

// TestInspectNamesHostsTried: `protect --inspect` of a server with no
// --allow-host that calls its API at start names the host it tried, and
// the flag that would allow it; no gateway or network is left behind.
func TestInspectNamesHostsTried(t *testing.T) {
	cli := probeEngine(t)
	_, env := egressSetup(t, cli)
	fixtureImage, err := buildFixtureImage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := stateDir(t)
	cfg := filepath.Join(dir, "home", ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	entry := `{"mcpServers": {"dialer": {"command": "/usr/local/bin/mcpcage",
  "args": ["run", "--name=dialer", "--env=FIXTURE_DIAL", "--image", "` + fixtureImage + `"],
  "env": {"FIXTURE_DIAL": "api.example.test:8443"}}}}`
	if err := os.WriteFile(cfg, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("mcpcage", "protect", "--inspect", "--client", "cursor")
	cmd.Env = testEnv(dir, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("protect --inspect: %v\n%s", err, out)
	}
	if want := "! tried api.example.test at start, refused: add --allow-host api.example.test (HOST:PORT for a port other than 443) to its args before -- if it needs it"; !strings.Contains(string(out), want) {
		t.Errorf("protect --inspect does not name the host tried; want %q in:\n%s", want, out)
	}
	if !strings.Contains(string(out), "tools (0)") {
		t.Errorf("protect --inspect did not list the tools:\n%s", out)
	}
	if n, m := ownedBy(t, cli, cmd.Process.Pid); n != 0 || m != 0 {
		t.Errorf("protect --inspect left %d containers and %d networks", n, m)
	}
}

// An --egress-network that does not exist stops the start before the cage
// does, in one error line and one line of what to do, and leaves nothing:
// no container, no pipes.
func TestRunEgressNetworkMissing(t *testing.T) {
	cli := probeEngine(t)
	gatewayPath, err := cagetest.StaticMcpcage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := stateDir(t)
	cmd := exec.Command("mcpcage", "run", "--allow-host", "api.allowed.test", "--egress-network", "mcpcage-test-no-such-network", "--image", cagetest.ProbeImage)
	cmd.Env = testEnv(dir, cage.EnvGatewayBinary+"="+gatewayPath)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("started with a missing egress network:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `the egress network "mcpcage-test-no-such-network" does not exist`) || !strings.Contains(lines[1], "--egress-network") {
		t.Errorf("want the error and what to do, two lines:\n%s", out)
	}
	if c, _ := ownedBy(t, cli, cmd.Process.Pid); c != 0 {
		t.Errorf("left %d containers", c)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "mcpcage", "egress", "pipes-*")); len(m) != 0 {
		t.Errorf("left %v", m)
	}
}

// egressRecords are the session's egress records, as `audit show --json`
// prints them, one JSON object a line.
func egressRecords(t *testing.T, dir, kind string) string {
	t.Helper()
	show := exec.Command("mcpcage", "audit", "show", "--kind", kind, "--json")
	show.Env = testEnv(dir)
	b, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("audit show: %v\n%s", err, b)
	}
	return string(b)
}

// TestRunEgressAuditCannotBeBlinded: the cage tries to switch the egress
// audit off, first with a refused proxy request whose reason (quoting a
// request line of 20,000 control bytes, each escaped twice) would make an
// event line past the reader's bound, then with 300 connections of 60 KB
// at once that would exhaust the gateway's memory. The gateway lives, and a later upload to
// the allowed host is on record: when allowed and when it ended.
func TestRunEgressAuditCannotBeBlinded(t *testing.T) {
	cli := probeEngine(t)
	_, env := egressSetup(t, cli)
	dir := stateDir(t)
	cs, stderr := caged(t, dir, env, "--allow-host", "api.allowed.test", "--allow-private-addresses", "--name", "egress-blind", "--image", cagetest.ProbeImage)
	if out, _ := call(t, cs, "probe", map[string]any{"check": "proxylong", "target": "20000"}); !strings.Contains(out, "403") {
		t.Logf("the long proxy request: %s", out)
	}
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.allowed.test/"}); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("the allowed host was not reached after the long refusal: %s\nstderr:\n%s", out, stderr.String())
	}
	call(t, cs, "probe", map[string]any{"check": "flood", "target": "300:60000"})
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.allowed.test/"}); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("the allowed host was not reached after the flood: %s\nstderr:\n%s", out, stderr.String())
	}
	cs.Close()
	recs := egressRecords(t, dir, "egress")
	// The flood's connections name no host: the port alone names the
	// allowed one, so they are allowed (via port) up to the bound, and
	// recorded; the HTTPS calls come via sni.
	var opens, ends, tooMany, long int
	for _, l := range strings.Split(recs, "\n") {
		sni := strings.Contains(l, `"api.allowed.test"`) && strings.Contains(l, `"via":"sni"`)
		switch {
		case sni && strings.Contains(l, `"phase":"open"`):
			opens++
		case sni && strings.Contains(l, `"phase":"end"`):
			ends++
		case strings.Contains(l, "connections at once"):
			tooMany++
		case strings.Contains(l, `"port":3128`) && strings.Contains(l, `"verdict":"refused"`):
			long++
			if len(l) > 4096 {
				t.Errorf("the long refusal's record is %d bytes", len(l))
			}
		}
	}
	if opens != 2 || ends != 2 {
		t.Errorf("allowed connections: %d open and %d end records, want 2 and 2:\n%s", opens, ends, recs)
	}
	if long != 1 {
		t.Errorf("the long refusal: %d records, want 1:\n%s", long, recs)
	}
	if tooMany == 0 && !strings.Contains(egressRecords(t, dir, "reports_held"), "refused connections") {
		t.Errorf("the connections past the gateway's bound are not on record")
	}
	if strings.Contains(stderr.String(), "egress gateway of") {
		t.Errorf("the gateway ended:\n%s", stderr.String())
	}
}

// TestRunEgressGatewayDeathEndsSession: the gateway killed while the
// server runs ends the session, with one stderr line and an audit record:
// a session whose connections can no longer be recorded does not go on.
func TestRunEgressGatewayDeathEndsSession(t *testing.T) {
	cli := probeEngine(t)
	_, env := egressSetup(t, cli)
	dir := stateDir(t)
	victim := startInitialized(t, testEnv(dir, env...), "run", "--allow-host", "api.allowed.test", "--allow-private-addresses", "--image", cagetest.ProbeImage)
	f := filters.NewArgs(filters.Arg("label", cage.LabelOwnerPID+"="+strconv.Itoa(victim.Process.Pid)), filters.Arg("label", cage.LabelEgress+"=1"))
	var gws []container.Summary
	for deadline := time.Now().Add(30 * time.Second); len(gws) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if gws, err = cli.ContainerList(context.Background(), container.ListOptions{Filters: f}); err != nil {
			t.Fatal(err)
		}
	}
	if len(gws) != 1 {
		t.Fatalf("the gateway: %v", gws)
	}
	if err := cli.ContainerKill(context.Background(), gws[0].ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- victim.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the session went on after its gateway died:\n%s", victim.Stderr.(*cageBuffer).String())
	}
	errOut := victim.Stderr.(*cageBuffer).String()
	if !strings.Contains(errOut, "the egress gateway of") || !strings.Contains(errOut, "ended while the server ran") {
		t.Errorf("stderr does not say why the session ended:\n%s", errOut)
	}
	if recs := egressRecords(t, dir, "egress_gateway_ended"); !strings.Contains(recs, "egress_gateway_ended") {
		t.Errorf("no egress_gateway_ended record:\n%s", recs)
	}
	if c, _ := ownedBy(t, cli, victim.Process.Pid); c != 0 {
		t.Errorf("left %d containers", c)
	}
}
