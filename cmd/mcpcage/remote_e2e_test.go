package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/clients"
)

// remoteServer is a Streamable HTTP (MODE=streamable) or HTTP+SSE
// (MODE=sse) server made with the official TypeScript SDK, one "echo"
// tool; with NEED_HEADER="Name: value" it answers 401 to a request
// without that header.
const remoteServer = `
import http from 'node:http';
import {randomUUID} from 'node:crypto';
import {McpServer} from '@modelcontextprotocol/sdk/server/mcp.js';
import {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {SSEServerTransport} from '@modelcontextprotocol/sdk/server/sse.js';
import {z} from 'zod';

const mode = process.env.MODE || 'streamable';
const need = process.env.NEED_HEADER || '';
function newServer() {
  const s = new McpServer({name: 'remote-e2e', version: '1.0.0'});
  s.registerTool('echo', {description: 'Echoes its text.', inputSchema: {text: z.string()}}, async ({text}) => ({content: [{type: 'text', text: 'echo: ' + text}]}));
  return s;
}
const transports = {};
const httpServer = http.createServer(async (req, res) => {
  if (need) {
    const [n, v] = need.split(/:\s*/);
    if (req.headers[n.toLowerCase()] !== v) { res.writeHead(401, {'WWW-Authenticate': 'Bearer'}).end(); return; }
  }
  const url = new URL(req.url, 'http://x');
  if (mode === 'sse') {
    if (req.method === 'GET' && url.pathname === '/sse') {
      const t = new SSEServerTransport('/messages', res);
      transports[t.sessionId] = t;
      res.on('close', () => delete transports[t.sessionId]);
      await newServer().connect(t);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const t = transports[url.searchParams.get('sessionId')];
      if (!t) { res.writeHead(400).end(); return; }
      await t.handlePostMessage(req, res);
      return;
    }
    res.writeHead(405).end(); return;
  }
  if (url.pathname !== '/mcp') { res.writeHead(404).end(); return; }
  const sid = req.headers['mcp-session-id'];
  let t = sid && transports[sid];
  if (!t) {
    if (req.method !== 'POST') { res.writeHead(400).end(); return; }
    t = new StreamableHTTPServerTransport({sessionIdGenerator: () => randomUUID(), onsessioninitialized: id => { transports[id] = t; }});
    await newServer().connect(t);
  }
  await t.handleRequest(req, res);
});
httpServer.listen(0, '127.0.0.1', () => { console.log('PORT ' + httpServer.address().port); });
`

// startRemoteServer starts remoteServer on a loopback port and returns its
// base URL.
func startRemoteServer(t *testing.T, prefix string, env ...string) string {
	t.Helper()
	script := filepath.Join(prefix, "remote-server-e2e.mjs")
	if err := os.WriteFile(script, []byte(remoteServer), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		port, ok := strings.CutPrefix(l, "PORT ")
		if !ok {
			t.Fatalf("the TypeScript SDK server said %q", l)
		}
		return "http://127.0.0.1:" + port
	case <-time.After(60 * time.Second):
		t.Fatal("the TypeScript SDK server did not start in 60 s")
	}
	return ""
}

// startEverythingHTTP starts the everything server's Streamable HTTP
// transport (npx -y PKG streamableHttp, on the host) on a free loopback
// port and returns its base URL once it accepts connections.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("npx", "-y", everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "npm_config_update_notifier=false")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s streamableHttp did not listen on %s in 3 minutes", everything, addr)
	return ""
}

// TestRunURLRealServerAndClients: remote servers made with the official
// TypeScript SDK, Streamable HTTP and HTTP+SSE, one wanting a key, reached
// through `mcpcage run --url` by the SDK's own stdio client (the key from
// the entry's env block, as ${API_KEY}) and by Claude Code's `claude mcp
// list`; the sessions are on record with their URL and never the key.
func TestRunURLRealServerAndClients(t *testing.T) {
	prefix := npmClients(t)
	claude := filepath.Join(prefix, "node_modules", ".bin", "claude")
	const key = "k-live-5be0c1d2"
	streamable := startRemoteServer(t, prefix, "MODE=streamable", "NEED_HEADER=X-Api-Key: "+key)
	sse := startRemoteServer(t, prefix, "MODE=sse")
	evHTTP := startEverythingHTTP(t)
	dir := stateDir(t)
	homeDir := filepath.Join(dir, "home")
	if err := os.MkdirAll(homeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "mcpcage")
	exe, err := exec.LookPath("mcpcage")
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env,omitempty"`
	}
	servers := map[string]entry{
		"streamable": {exe, []string{"run", "--home", state, "--url", streamable + "/mcp", "--header", "X-Api-Key: ${API_KEY}"}, map[string]string{"API_KEY": key}},
		"sse":        {exe, []string{"run", "--home", state, "--url", sse + "/sse"}, nil},
		"everything": {exe, []string{"run", "--home", state, "--url", evHTTP + "/mcp"}, nil},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	cfg := filepath.Join(homeDir, ".claude.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}

	res := runTSClient(t, prefix, cfg, `{}`, homeDir, homeDir)
	for name := range servers {
		tools, ok := res[name].([]any)
		if !ok || len(tools) == 0 || tools[0] != "echo" || name != "everything" && len(tools) != 1 {
			t.Errorf("TypeScript SDK client, %s: %v", name, res[name])
		}
	}

	out := claudeRunner(t, claude, []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER"), "DISABLE_AUTOUPDATER=1"}, homeDir)("mcp", "list")
	for name := range servers {
		ok := false
		for _, l := range strings.Split(out, "\n") {
			ok = ok || strings.HasPrefix(l, name+": ") && strings.Contains(l, "Connected")
		}
		if !ok {
			t.Errorf("claude mcp list does not show %s connected:\n%s", name, out)
		}
	}

	logs, _ := filepath.Glob(filepath.Join(state, "audit", "log-*.jsonl"))
	var all strings.Builder
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	for _, want := range []string{`"kind":"remote"`, `"url":"` + streamable + `/mcp"`, `"url":"` + sse + `/sse"`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no %s in the audit log", want)
		}
	}
	if strings.Contains(all.String(), key) {
		t.Error("the key is in the audit log")
	}
}

// TestRemoteFixRealClient: a remote server added with Claude Code's own
// `claude mcp add --transport http` (with a key in a header) is caged by
// protect --fix (mcpcage run --url, the key moved to the entry's env
// block); `claude mcp list` connects through mcpcage; unwrap restores the
// file byte for byte.
func TestRemoteFixRealClient(t *testing.T) {
	prefix := npmClients(t)
	claude := filepath.Join(prefix, "node_modules", ".bin", "claude")
	const key = "k-live-9c41e2d7aa"
	base := startRemoteServer(t, prefix, "MODE=streamable", "NEED_HEADER=X-Api-Key: "+key)
	dir := stateDir(t)
	homeDir := filepath.Join(dir, "home")
	if err := os.MkdirAll(homeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPCAGE_HOME", filepath.Join(dir, "mcpcage"))
	clientEnv := []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER"), "DISABLE_AUTOUPDATER=1", "MCPCAGE_HOME=" + filepath.Join(dir, "mcpcage")}
	claudeRun := claudeRunner(t, claude, clientEnv, homeDir)
	claudeRun("mcp", "add", "--scope", "user", "--transport", "http", "remote", base+"/mcp", "--header", "X-Api-Key: "+key)
	cfg := filepath.Join(homeDir, ".claude.json")
	before, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(claudeRun("mcp", "list"), "Connected") {
		t.Fatal("the remote server does not connect before --fix")
	}
	exe, err := exec.LookPath("mcpcage")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	opts := &ProtectOptions{
		IO:      &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Layout:  clients.Layout{OS: "linux", Home: homeDir, Getenv: func(string) string { return "" }},
		Clients: []string{"claude-code"}, Fix: true, Yes: true, NoInstall: true, Exe: exe, Now: time.Now,
	}
	if err := protectRun(opts); err != nil {
		t.Fatalf("protect --fix: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "Caged 1 server in 1 file") || !strings.Contains(out.String(), "mcpcage login remote") {
		t.Fatalf("protect --fix said:\n%s", out.String())
	}
	fixed, _ := os.ReadFile(cfg)
	var doc struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(fixed, &doc); err != nil {
		t.Fatal(err)
	}
	e := doc.MCPServers["remote"]
	if e.Command != exe || e.URL != "" || strings.Contains(strings.Join(e.Args, " "), key) || e.Env["MCPCAGE_HEADER_X_API_KEY"] != key {
		t.Fatalf("the caged entry: %+v", e)
	}
	list := claudeRun("mcp", "list")
	ok := false
	for _, l := range strings.Split(list, "\n") {
		ok = ok || strings.HasPrefix(l, "remote: ") && strings.Contains(l, "mcpcage run") && strings.Contains(l, "Connected")
	}
	if !ok {
		t.Fatalf("claude mcp list after --fix:\n%s", list)
	}

	out.Reset()
	uopts := &UnwrapOptions{ProtectOptions: ProtectOptions{IO: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Layout: opts.Layout, Clients: []string{"claude-code"}, Yes: true, Now: time.Now}}
	if err := unwrapRun(uopts); err != nil {
		t.Fatalf("unwrap: %v\n%s%s", err, out.String(), errOut.String())
	}
	after, _ := os.ReadFile(cfg)
	if !bytes.Equal(after, before) {
		t.Errorf("unwrap did not restore the file byte for byte:\n%s\nwant:\n%s", after, before)
	}
}

// fakeBrowser builds a program that follows an authorization URL to its
// loopback redirect, as a person's click would, for $BROWSER.
func fakeBrowser(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := `package main

import (
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		os.Exit(1)
	}
	resp.Body.Close()
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fakebrowser\n\ngo 1.22\n"), 0o644)
	bin := filepath.Join(dir, "fake-browser")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake browser: %v\n%s", err, out)
	}
	return bin
}

// TestRunURLSDKOAuth: the official TypeScript SDK's example server behind
// its own example authorization server (simpleStreamableHttp --oauth, on
// loopback): `mcpcage login` registers, authorizes with PKCE and the
// resource indicator, keeps the token 0600, and the SDK's stdio client
// then lists the server's tools through `mcpcage run --url`.
func TestRunURLSDKOAuth(t *testing.T) {
	prefix := npmClients(t)
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	mcpPort, authPort := free(), free()
	script := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "simpleStreamableHttp.js")
	srv := exec.Command("node", script, "--oauth")
	srv.Env = append(os.Environ(), "MCP_PORT="+mcpPort, "MCP_AUTH_PORT="+authPort)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "MCP Streamable HTTP Server listening") {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the SDK's example server ended before it listened")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the SDK's example server did not listen in 60 s")
	}
	u := "http://localhost:" + mcpPort + "/mcp"
	dir := stateDir(t)
	state := filepath.Join(dir, "mcpcage")
	exe, err := exec.LookPath("mcpcage")
	if err != nil {
		t.Fatal(err)
	}
	login := exec.Command(exe, "login", "--name", "sdk-oauth", u)
	login.Env = append(os.Environ(), "MCPCAGE_HOME="+state, "BROWSER="+fakeBrowser(t))
	var stderr bytes.Buffer
	login.Stderr = &stderr
	lout, err := login.Output()
	if err != nil || !strings.Contains(string(lout), "Authorized sdk-oauth") {
		t.Fatalf("mcpcage login: %v\n%s%s", err, lout, stderr.String())
	}
	st, err := os.Stat(filepath.Join(state, "oauth", "sdk-oauth.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v", st, err)
	}
	homeDir := filepath.Join(dir, "home")
	os.MkdirAll(homeDir, 0o755)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"sdk-oauth": map[string]any{
		"command": exe, "args": []string{"run", "--home", state, "--name", "sdk-oauth", "--url", u}}}})
	cfg := filepath.Join(homeDir, ".claude.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	res := runTSClient(t, prefix, cfg, `{}`, homeDir, homeDir)
	tools, _ := res["sdk-oauth"].([]any)
	if !slices.Contains(tools, any("greet")) {
		t.Fatalf("TypeScript SDK client through mcpcage run --url: %v", res["sdk-oauth"])
	}
}
