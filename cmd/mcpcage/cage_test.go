package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
	"github.com/mcpcage/mcpcage/internal/launch"
)

func scriptCage() {
	// Scripts have their own HOME, where Go's default caches would be empty:
	// give the fixtures that run `go build` (mkprobeimage) the real ones.
	if strings.HasSuffix(filepath.Base(os.Args[0]), ".test") {
		if os.Getenv("GOCACHE") == "" {
			if d, err := os.UserCacheDir(); err == nil {
				os.Setenv("GOCACHE", filepath.Join(d, "go-build"))
			}
		}
		if os.Getenv("GOMODCACHE") == "" && build.Default.GOPATH != "" {
			os.Setenv("GOMODCACHE", filepath.Join(filepath.SplitList(build.Default.GOPATH)[0], "pkg", "mod"))
		}
	}
	// mkprobeimage builds the escape probe's image for scripts (run_image*).
	scriptCommands["mkprobeimage"] = func() {
		ctx := context.Background()
		cli, err := cage.Connect(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := cagetest.BuildProbeImage(ctx, cli); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// Versions from testdata/npm-servers.tsv, so the tests run what the
// compatibility run measured.
const (
	everything = "@modelcontextprotocol/server-everything@2026.8.31"
	filesystem = "@modelcontextprotocol/server-filesystem@2026.8.31"
	memory     = "@modelcontextprotocol/server-memory@2026.8.31"
	thinking   = "@modelcontextprotocol/server-sequential-thinking@2026.8.31"
)

// stateDir is a fresh $MCPCAGE_HOME (and $HOME) for one test.
func stateDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, s := range []string{"mcpcage", "home"} {
		if err := os.MkdirAll(filepath.Join(d, s), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func testEnv(dir string, extra ...string) []string {
	bin, err := staticMcpcage()
	if err != nil {
		panic(err)
	}
	env := append(os.Environ(), "MCPCAGE_HOME="+filepath.Join(dir, "mcpcage"), "HOME="+filepath.Join(dir, "home"), "NO_COLOR=1",
		cage.EnvGatewayBinary+"="+bin)
	return append(env, extra...)
}

// staticMcpcage is mcpcage built as users get it (static): the test binary,
// which runs as mcpcage in these tests, is linked with cgo, and the cage's
// launcher and the egress gateway run mcpcage's binary in the container.
// Every run in the tests then takes the way users' runs take (stdio on
// named pipes, stdioWay).
var staticMcpcage = sync.OnceValues(func() (string, error) { return cagetest.StaticMcpcage(context.Background()) })

// caged connects the official go-sdk client to `mcpcage run ARGS`, the
// binary as a client config would start it.
func caged(t *testing.T, dir string, env []string, args ...string) (*mcp.ClientSession, *cageBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.Command("mcpcage", append([]string{"run"}, args...)...)
	cmd.Env = testEnv(dir, env...)
	stderr := &cageBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcage-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to mcpcage run %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

func toolNames(t *testing.T, cs *mcp.ClientSession, stderr *cageBuffer) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v\nstderr:\n%s", err, stderr.String())
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRunNpmServers: real servers from npm, installed by the install phase
// and caged, list their tools to the official client through the proxy.
func TestRunNpmServers(t *testing.T) {
	t.Run("everything", func(t *testing.T) {
		dir := stateDir(t)
		cs, stderr := caged(t, dir, nil, "--", "npx", "-y", everything)
		names := toolNames(t, cs, stderr)
		if !contains(names, "echo") {
			t.Fatalf("tools %v lack echo", names)
		}
		if out, isErr := call(t, cs, "echo", map[string]any{"message": "through the cage"}); isErr || !strings.Contains(out, "through the cage") {
			t.Errorf("echo: %q (error %v)", out, isErr)
		}
	})
	t.Run("sequential-thinking", func(t *testing.T) {
		dir := stateDir(t)
		cs, stderr := caged(t, dir, nil, "npx", "-y", thinking) // without "--"
		if names := toolNames(t, cs, stderr); !contains(names, "sequentialthinking") {
			t.Fatalf("tools %v lack sequentialthinking", names)
		}
	})
	t.Run("filesystem", func(t *testing.T) {
		dir := stateDir(t)
		ro := filepath.Join(dir, "docs")
		rw := filepath.Join(dir, "notes")
		for _, d := range []string{ro, rw} {
			if err := os.MkdirAll(d, 0o777); err != nil {
				t.Fatal(err)
			}
			// The server runs as uid 1000 (or as us): let it write, so that
			// only the cage's read-only mount can stop the write to ro.
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(ro, "readme.txt"), []byte("read me"), 0o644); err != nil {
			t.Fatal(err)
		}
		cs, stderr := caged(t, dir, nil, "--mount", rw+":rw", "--", "npx", "-y", filesystem, ro, rw)
		names := toolNames(t, cs, stderr)
		if !contains(names, "write_file") || !contains(names, "read_text_file") {
			t.Fatalf("tools %v", names)
		}
		if out, isErr := call(t, cs, "read_text_file", map[string]any{"path": filepath.Join(ro, "readme.txt")}); isErr || !strings.Contains(out, "read me") {
			t.Errorf("reading the read-only folder: %q (error %v)", out, isErr)
		}
		if out, isErr := call(t, cs, "write_file", map[string]any{"path": filepath.Join(rw, "a.txt"), "content": "written in the cage"}); isErr {
			t.Errorf("writing the :rw folder failed: %s", out)
		}
		if b, err := os.ReadFile(filepath.Join(rw, "a.txt")); err != nil || string(b) != "written in the cage" {
			t.Errorf("the :rw folder on the host has %q, %v", b, err)
		}
		out, isErr := call(t, cs, "write_file", map[string]any{"path": filepath.Join(ro, "b.txt"), "content": "must not land"})
		if !isErr {
			t.Errorf("writing the read-only folder succeeded: %s", out)
		} else if !strings.Contains(strings.ToLower(out), "read-only") {
			t.Errorf("writing the read-only folder failed for another reason: %s", out)
		}
		if _, err := os.Stat(filepath.Join(ro, "b.txt")); err == nil {
			t.Error("a file appeared in the read-only folder on the host")
		}
	})
	t.Run("memory", func(t *testing.T) {
		dir := stateDir(t)
		// server-memory keeps its store next to its code by default, which
		// is read-only in the cage: point it at its private HOME.
		env := []string{"MEMORY_FILE_PATH=" + cage.HomeInContainer + "/memory.jsonl"}
		cs, stderr := caged(t, dir, env, "--env", "MEMORY_FILE_PATH", "--", "npx", "-y", memory)
		if names := toolNames(t, cs, stderr); !contains(names, "create_entities") {
			t.Fatalf("tools %v", names)
		}
		out, isErr := call(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{
			"name": "cage-test-entity", "entityType": "test", "observations": []string{"kept across sessions"},
		}}})
		if isErr {
			t.Fatalf("create_entities: %s\nstderr:\n%s", out, stderr.String())
		}
		cs.Close()

		cs2, stderr2 := caged(t, dir, env, "--env", "MEMORY_FILE_PATH", "--", "npx", "-y", memory)
		out, isErr = call(t, cs2, "read_graph", map[string]any{})
		if isErr || !strings.Contains(out, "cage-test-entity") || !strings.Contains(out, "kept across sessions") {
			t.Errorf("the second session does not see the first one's store: %q (error %v)\nstderr:\n%s", out, isErr, stderr2.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "mcpcage", "servers", "modelcontextprotocol__server-memory", "home", "memory.jsonl")); err != nil {
			t.Errorf("the store is not in the server's private HOME: %v", err)
		}
	})
}

// containersOf counts the containers whose owner label is pid.
func containersOf(t *testing.T, cli *client.Client, pid int) int {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", cage.LabelOwnerPID+"="+strconv.Itoa(pid)), filters.Arg("label", cage.LabelCage+"=1")),
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// TestRunOrphanReaped: a SIGKILLed mcpcage cannot remove its container; the
// next start does.
func TestRunOrphanReaped(t *testing.T) {
	cli := probeEngine(t)
	dir := stateDir(t)

	victim := startInitialized(t, testEnv(dir), "run", "--image", cagetest.ProbeImage)
	pid := victim.Process.Pid
	if n := containersOf(t, cli, pid); n != 1 {
		t.Fatalf("%d containers owned by the running mcpcage, want 1", n)
	}
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	// Killing the client does not stop the container: it is now an orphan.
	if n := containersOf(t, cli, pid); n != 1 {
		t.Fatalf("%d containers after SIGKILL, want the 1 orphan", n)
	}
	ps := exec.Command("mcpcage", "ps", "--json")
	ps.Env = testEnv(dir)
	out, err := ps.Output()
	if err != nil {
		t.Fatalf("mcpcage ps: %v", err)
	}
	var entries []struct {
		OwnerPID int    `json:"owner_pid"`
		Owner    string `json:"owner"`
		Name     string `json:"name"`
	}
	if err := json.Unmarshal(out, &entries); err != nil {
		t.Fatalf("ps --json: %v in %s", err, out)
	}
	found := false
	for _, e := range entries {
		if e.OwnerPID == pid {
			found = true
			if want := launch.DeriveName("image", "", cagetest.ProbeImage); e.Owner != "gone" || e.Name != want {
				t.Errorf("ps shows the orphan as %+v, want owner gone and name %q", e, want)
			}
		}
	}
	if !found {
		t.Errorf("ps --json does not list the orphan of pid %d: %s", pid, out)
	}
	table := exec.Command("mcpcage", "ps")
	table.Env = testEnv(dir)
	tout, err := table.Output()
	if err != nil {
		t.Fatalf("mcpcage ps: %v", err)
	}
	if !strings.HasPrefix(string(tout), "NAME ") || !strings.Contains(string(tout), fmt.Sprintf("%d (gone)", pid)) {
		t.Errorf("mcpcage ps does not show the orphan of pid %d as gone:\n%s", pid, tout)
	}

	// The next start reaps it.
	next := exec.Command("mcpcage", "run", "--image", cagetest.ProbeImage)
	next.Env = testEnv(dir)
	next.Stdin = strings.NewReader("")
	nextErr := &cageBuffer{}
	next.Stderr = nextErr
	if err := next.Run(); err != nil {
		t.Fatalf("next run: %v\n%s", err, nextErr.String())
	}
	if n := containersOf(t, cli, pid); n != 0 {
		t.Errorf("%d containers of the killed mcpcage after the next start, want 0", n)
	}
	if !strings.Contains(nextErr.String(), "orphaned cage") {
		t.Errorf("the next start did not say it removed the orphan: %s", nextErr.String())
	}
	if n := containersOf(t, cli, next.Process.Pid); n != 0 {
		t.Errorf("the next run left %d containers behind", n)
	}
}

type cageBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *cageBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *cageBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func scriptCage2() {
	// expectcode N CMD ARGS... runs CMD with the script's stdio and fails
	// unless it exits with status N (testscript's `! exec` cannot tell 2
	// from 125).
	scriptCommands["expectcode"] = func() {
		want, err := strconv.Atoi(os.Args[1])
		if err != nil || len(os.Args) < 3 {
			fmt.Fprintln(os.Stderr, "usage: expectcode N CMD ARGS...")
			os.Exit(2)
		}
		cmd := exec.Command(os.Args[2], os.Args[3:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = cmd.Run()
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if got != want {
			fmt.Fprintf(os.Stderr, "expectcode: exit status %d, want %d\n", got, want)
			os.Exit(1)
		}
	}
}

// TestRunSignalRemovesCage: SIGTERM, SIGINT or SIGHUP to mcpcage ends the session and
// removes the container, children included.
func TestRunSignalRemovesCage(t *testing.T) {
	cli := probeEngine(t)
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt, syscall.SIGHUP} {
		dir := stateDir(t)
		cmd := exec.Command("mcpcage", "run", "--image", cagetest.ProbeImage)
		cmd.Env = testEnv(dir)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		errs := &cageBuffer{}
		cmd.Stderr = errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "escape-probe") {
			cmd.Process.Kill()
			t.Fatalf("no initialize answer: %q %v\n%s", line, err, errs.String())
		}
		if n := containersOf(t, cli, cmd.Process.Pid); n != 1 {
			t.Fatalf("%d containers while running, want 1", n)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			// The user stopped the session: 128 + the signal's number.
			ee, ok := err.(*exec.ExitError)
			if want := 128 + int(sig.(syscall.Signal)); !ok || ee.ExitCode() != want {
				t.Errorf("%v: mcpcage ended with %v, want status %d\n%s", sig, err, want, errs.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: mcpcage did not end", sig)
		}
		if n := containersOf(t, cli, cmd.Process.Pid); n != 0 {
			t.Errorf("%v: %d containers left after the signal", sig, n)
		}
	}
}

// TestRunPackageNotFound: a package the registry does not have gives one
// line, exit 125, and the waiting client the reason.
func TestRunPackageNotFound(t *testing.T) {
	dir := stateDir(t)
	cmd := exec.Command("mcpcage", "run", "--", "npx", "-y", "@mcpcage-test/no-such-package-4f1d2c")
	cmd.Env = testEnv(dir)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitCageError {
		t.Fatalf("%v, want exit %d\n%s", err, exitCageError, errOut.String())
	}
	if !strings.Contains(errOut.String(), "mcpcage: error: npm package \"@mcpcage-test/no-such-package-4f1d2c\" not found") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	name := launch.DeriveName("npx", "@mcpcage-test/no-such-package-4f1d2c", "")
	if !strings.Contains(out.String(), `"id":1,"error":{"code":-32603,"message":"mcpcage could not start \"`+name+`\": npm package`) {
		t.Errorf("stdout: %s", out.String())
	}
}

// TestRunEnvByName: --env NAME passes mcpcage's own value to the server
// through the API, and the value shows in no argv and no output.
func TestRunEnvByName(t *testing.T) {
	ctx := context.Background()
	cli := probeEngine(t)
	dir := stateDir(t)
	secret := "sk-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cs, stderr := caged(t, dir, []string{"MCPCAGE_TEST_SECRET=" + secret, "MCPCAGE_TEST_OTHER=not-passed"},
		"--env", "MCPCAGE_TEST_SECRET", "--name", "env-probe", "--image", cagetest.ProbeImage)
	out, _ := call(t, cs, "probe", map[string]any{"check": "env", "target": "MCPCAGE_TEST_SECRET"})
	sum := sha256.Sum256([]byte(secret))
	if !strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Errorf("the server did not get the value: %s", out)
	}
	if out, _ := call(t, cs, "probe", map[string]any{"check": "env", "target": "MCPCAGE_TEST_OTHER"}); !strings.Contains(out, `"escaped":false`) {
		t.Errorf("a variable not named with --env reached the server: %s", out)
	}
	cs2, err := cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", cage.LabelName+"=env-probe"))})
	if err != nil || len(cs2) == 0 {
		t.Fatalf("the cage is not listed: %v", err)
	}
	for _, c := range cs2 {
		info, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			continue
		}
		argv := info.Path + " " + strings.Join(info.Args, " ") + " " + strings.Join(info.Config.Cmd, " ") + " " + strings.Join(info.Config.Entrypoint, " ")
		if strings.Contains(argv, secret) {
			t.Errorf("the value is in the container's argv: %s", argv)
		}
	}
	cs.Close()
	if strings.Contains(stderr.String(), secret) {
		t.Errorf("the value is in mcpcage's output:\n%s", stderr.String())
	}
}

// TestEscapeThroughRun runs escape probes through `mcpcage run --image`, the
// command line a user runs (the full suite, with control cases, is
// internal/cage's TestEscape*).
func TestEscapeThroughRun(t *testing.T) {
	ctx := context.Background()
	cli := probeEngine(t)
	gw, err := cagetest.BridgeGateway(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	dir := stateDir(t)
	secret := filepath.Join(dir, "home", ".ssh")
	if err := os.MkdirAll(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(secret, "id_ed25519"), []byte("not a key"), 0o600)

	cs, stderr := caged(t, dir, nil, "--pids", "32", "--memory", "64m", "--tmp-size", "4m", "--image", cagetest.ProbeImage)
	for _, p := range []struct{ check, target string }{
		{"ifaces", ""},
		{"tcp", ln.Addr().String()},
		{"tcp", lo.Addr().String()},
		{"read", filepath.Join(secret, "id_ed25519")},
		{"read", "/etc/shadow"},
		{"write", "/data/x"},
		{"fill", "/tmp/f:" + strconv.Itoa(8<<20)},
		{"fork", "40"},
		{"memory", "128"},
		{"root", ""},
		{"caps", ""},
		{"setuid", ""},
		{"suid", "/probe-suid"},
		{"socket", ""},
	} {
		out, isErr := call(t, cs, "probe", map[string]any{"check": p.check, "target": p.target})
		if isErr || !strings.Contains(out, `"escaped":false`) || strings.Contains(out, "unknown check") {
			t.Errorf("ESCAPE through mcpcage run: %s %s: %s\n%s", p.check, p.target, out, stderr.String())
		}
	}
	cs.Close()

	// Mounting a folder that holds $MCPCAGE_HOME does not show mcpcage's
	// state (pins, audit, other servers' HOMEs).
	other := filepath.Join(dir, "mcpcage", "servers", "other", "home")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	// Readable by the cage's user, as they are when mcpcage runs as the user
	// (the server then has the user's uid): only the mask may stop the read.
	for p := other; p != dir; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	os.WriteFile(filepath.Join(other, "token"), []byte("another server's secret"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("visible"), 0o644)
	cs2, stderr2 := caged(t, dir, nil, "--mount", dir, "--image", cagetest.ProbeImage)
	if out, _ := call(t, cs2, "probe", map[string]any{"check": "read", "target": filepath.Join(other, "token")}); !strings.Contains(out, `"escaped":false`) {
		t.Errorf("ESCAPE: mcpcage's state shows through a mounted parent folder: %s\n%s", out, stderr2.String())
	}
	if out, _ := call(t, cs2, "probe", map[string]any{"check": "read", "target": filepath.Join(dir, "notes.txt")}); !strings.Contains(out, `"escaped":true`) {
		t.Errorf("the mounted folder itself should be readable: %s", out)
	}
}

// probeEngine connects to the Docker engine (closed when the test ends) and
// makes sure the escape probe's image is there.
func probeEngine(t *testing.T) *client.Client {
	t.Helper()
	ctx := context.Background()
	cli, err := cage.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	if _, err := cagetest.BuildProbeImage(ctx, cli); err != nil {
		t.Fatal(err)
	}
	return cli
}

// TestRunSocketFolders: the folders that hold the sockets of the user's
// daemons (the runtime folder, tmux's, ssh-agent's) are not mounted because
// a server's argument names them and are masked inside a folder that is;
// a --mount that names one shows it, and its socket still cannot be
// connected to.
func TestRunSocketFolders(t *testing.T) {
	probeEngine(t)
	dir := stateDir(t)
	base := filepath.Join(dir, "share")
	runDir := filepath.Join(base, "run-user")
	agentDir := filepath.Join(base, "ssh-q1w2e3")
	tmuxDir := filepath.Join(base, "tmux-1000")
	var uid, gid int
	fmt.Sscanf(cage.User(), "%d:%d", &uid, &gid)
	for _, sock := range []string{filepath.Join(runDir, "bus"), filepath.Join(agentDir, "agent.42"), filepath.Join(tmuxDir, "default")} {
		if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("host daemon"))
				c.Close()
			}
		}()
		// The cage runs as the user: their own modes do not keep it out.
		os.Lchown(sock, uid, gid)
		os.Lchown(filepath.Dir(sock), uid, gid)
	}
	if err := os.MkdirAll(filepath.Join(runDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(base, "notes.txt"), []byte("visible"), 0o644)
	for p := base; p != filepath.Dir(dir); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	env := []string{"XDG_RUNTIME_DIR=" + runDir, "SSH_AUTH_SOCK=" + filepath.Join(agentDir, "agent.42"), "TMUX_TMPDIR=" + base}
	probe := func(cs *mcp.ClientSession, check, target string) string {
		out, _ := call(t, cs, "probe", map[string]any{"check": check, "target": target})
		return out
	}

	cs, stderr := caged(t, dir, env, "--image", cagetest.ProbeImage, "--", filepath.Join(runDir, "sub"), base)
	if out := probe(cs, "read", filepath.Join(base, "notes.txt")); !strings.Contains(out, `"escaped":true`) {
		t.Errorf("the folder named in the arguments should be mounted: %s\n%s", out, stderr.String())
	}
	for _, d := range []string{runDir, agentDir, tmuxDir} {
		// Empty, or closed to the cage's user: either way, no socket.
		if out := probe(cs, "read", d); !strings.Contains(out, `0 entries`) && !strings.Contains(out, `"escaped":false`) {
			t.Errorf("ESCAPE: the socket folder %s shows through the mounted %s: %s", d, base, out)
		}
	}
	cs.Close()
	if want := "mcpcage: warning: not mounting " + filepath.Join(runDir, "sub"); !strings.Contains(stderr.String(), want) {
		t.Errorf("no warning %q in:\n%s", want, stderr.String())
	}

	// Named with --mount, the agent's folder is shown; its socket still
	// cannot be connected to.
	cs2, stderr2 := caged(t, dir, env, "--mount", agentDir, "--image", cagetest.ProbeImage)
	if out := probe(cs2, "read", agentDir); !strings.Contains(out, `1 entries`) {
		t.Errorf("--mount %s should show it: %s\n%s", agentDir, out, stderr2.String())
	}
	if out := probe(cs2, "unix", filepath.Join(agentDir, "agent.42")); !strings.Contains(out, `"escaped":false`) {
		t.Errorf("ESCAPE: the agent's socket answered: %s", out)
	}
}

// TestRunIdentity: two images of different publishers that share a last
// name get different default names (pins, HOME); under one --name, the
// second is drift: locked until approved, and even then it gets a HOME of
// its own, without the token the first left.
func TestRunIdentity(t *testing.T) {
	cli := probeEngine(t)
	ctx := context.Background()
	imgA, imgB := "mcpcage-test-redteam-a/notes:latest", "mcpcage-test-redteam-b/notes:latest"
	for _, tag := range []string{imgA, imgB} {
		if err := cli.ImageTag(ctx, cagetest.ProbeImage, tag); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.ImageRemove(context.Background(), tag, image.RemoveOptions{}) })
	}
	dir := stateDir(t)
	probe := func(cs *mcp.ClientSession, check, target string) (string, bool) {
		return call(t, cs, "probe", map[string]any{"check": check, "target": target})
	}
	token := cage.HomeInContainer + "/token"

	cs, stderr := caged(t, dir, nil, "--image", imgA)
	if out, _ := probe(cs, "write", token); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("a could not write its HOME: %s\n%s", out, stderr.String())
	}
	cs.Close()
	cs, stderr = caged(t, dir, nil, "--image", imgB)
	if out, _ := probe(cs, "read", token); !strings.Contains(out, `"escaped":false`) {
		t.Errorf("b read the token a left in its HOME: %s\n%s", out, stderr.String())
	}
	cs.Close()
	pins, _ := filepath.Glob(filepath.Join(dir, "mcpcage", "pins", "*.json"))
	if len(pins) != 2 {
		t.Errorf("want one pin file for each image, got %q", pins)
	}

	cs, stderr = caged(t, dir, nil, "--name", "notes", "--image", imgA)
	if out, _ := probe(cs, "write", token); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("a could not write its HOME: %s\n%s", out, stderr.String())
	}
	cs.Close()
	cs, stderr = caged(t, dir, nil, "--name", "notes", "--image", imgB)
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err := cs.ListTools(lctx, nil)
	cancel()
	if err == nil || !strings.Contains(err.Error(), `"notes" now runs the image docker.io/mcpcage-test-redteam-b/notes, not the image docker.io/mcpcage-test-redteam-a/notes`) {
		t.Errorf("another image under the name notes should lock the session: %v\n%s", err, stderr.String())
	}
	if out, isErr := probe(cs, "read", token); !isErr || !strings.Contains(out, "mcpcage blocked the call") {
		t.Errorf("a call reached the other image before approval: %s", out)
	}
	cs.Close()
	diff := exec.Command("mcpcage", "diff", "notes")
	diff.Env = testEnv(dir)
	if out, _ := diff.CombinedOutput(); !strings.Contains(string(out), "launch changed") || !strings.Contains(string(out), "mcpcage-test-redteam-b/notes") {
		t.Errorf("diff should show the other image:\n%s", out)
	}
	approve := exec.Command("mcpcage", "approve", "notes", "--yes")
	approve.Env = testEnv(dir)
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	cs, stderr = caged(t, dir, nil, "--name", "notes", "--image", imgB)
	if out, isErr := probe(cs, "read", token); isErr || !strings.Contains(out, `"escaped":false`) || !strings.Contains(out, "no such file") {
		t.Errorf("approved, b should run in a HOME of its own: %s\n%s", out, stderr.String())
	}
}

// startInitialized starts mcpcage with args and env, sends the probe server
// initialize and waits for its answer: a session whose cage is running. The
// process is killed when the test ends if the test has not ended it.
func startInitialized(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("mcpcage", args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &cageBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "escape-probe") {
		t.Fatalf("no initialize answer: %q %v\nstderr:\n%s", line, err, stderr.String())
	}
	return cmd
}

// TestRunRuntimeRunsc: `mcpcage run --runtime runsc` runs the server under
// gVisor (the kernel it sees is gVisor's, not the host's), and a runtime
// the engine does not have is refused before anything starts, naming the
// runtimes it has and how to register one.
func TestRunRuntimeRunsc(t *testing.T) {
	probeEngine(t)
	dir := stateDir(t)
	var host syscall.Utsname
	if err := syscall.Uname(&host); err != nil {
		t.Fatal(err)
	}
	cs, stderr := caged(t, dir, nil, "--runtime", "runsc", "--image", cagetest.ProbeImage)
	out, _ := call(t, cs, "probe", map[string]any{"check": "uname"})
	if !strings.Contains(out, `"detail":"4.4.0 `) {
		t.Errorf("under --runtime runsc the server sees %s, want gVisor's kernel (4.4.0)\nstderr:\n%s", out, stderr.String())
	}
	cs.Close()
	cs, _ = caged(t, dir, []string{cage.EnvRuntime + "=runsc"}, "--image", cagetest.ProbeImage)
	if out, _ := call(t, cs, "probe", map[string]any{"check": "uname"}); !strings.Contains(out, `"detail":"4.4.0 `) {
		t.Errorf("with %s=runsc the server sees %s", cage.EnvRuntime, out)
	}
	cs.Close()
	cmd := exec.Command("mcpcage", "run", "--runtime", "nosuch", "--image", cagetest.ProbeImage)
	cmd.Env = testEnv(dir)
	cmd.Stdin = strings.NewReader("")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), `mcpcage: error: the engine has no runtime "nosuch" (it has `) || !strings.Contains(string(b), "mcpcage: hint: register \"nosuch\"") {
		t.Errorf("an unknown runtime: %v\n%s", err, b)
	}
}
