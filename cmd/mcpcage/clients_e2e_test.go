package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/clients"
)

// Real clients nobody here wrote, from npm, at fixed versions.
const (
	tsSDK      = "@modelcontextprotocol/sdk@1.32.2"
	claudeCode = "@anthropic-ai/claude-code@2.1.197"
)

// npmClients installs the client packages once per machine (under the user
// cache directory, keyed by their versions) and returns the prefix.
func npmClients(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is needed to install the real clients: %v", err)
	}
	h := sha256.Sum256([]byte(tsSDK + "\n" + claudeCode))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	prefix := filepath.Join(base, "mcpcage-test", "npm-clients-"+hex.EncodeToString(h[:6]))
	if _, err := os.Stat(filepath.Join(prefix, "node_modules", ".bin", "claude")); err == nil {
		return prefix
	}
	tmp := prefix + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", tmp, tsSDK, claudeCode)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s %s: %v\n%s", tsSDK, claudeCode, err, out)
	}
	os.RemoveAll(prefix)
	if err := os.Rename(tmp, prefix); err != nil {
		t.Fatal(err)
	}
	return prefix
}

// claudeRunner runs Claude Code with env in dir and returns what it printed;
// a failure ends the test.
func claudeRunner(t *testing.T, claude string, env []string, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Env, cmd.Dir = env, dir
		// Servers it started may hold its output open a moment longer.
		cmd.WaitDelay = 15 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// tsClient connects the TypeScript SDK's own stdio client to every server of
// a Claude Code file, with the SDK's default environment (HOME, PATH, USER,
// ...: no MCPCAGE_HOME) plus the entry's env block, offering caps, and prints
// {"name": ["tool", ...]} or {"name": "error: ..."}.
const tsClient = `
import {Client} from '@modelcontextprotocol/sdk/client/index.js';
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js';
import fs from 'node:fs';
const [file, capsJSON, cwd] = process.argv.slice(2);
const servers = JSON.parse(fs.readFileSync(file, 'utf8')).mcpServers;
const out = {};
for (const [name, s] of Object.entries(servers)) {
	const client = new Client({name: 'ts-sdk-e2e', version: '1'}, {capabilities: JSON.parse(capsJSON)});
	const transport = new StdioClientTransport({command: s.command, args: s.args, env: s.env, cwd, stderr: 'pipe'});
	let err = '';
	transport.stderr && transport.stderr.on('data', d => { err += d; });
	try {
		await client.connect(transport);
		const r = await client.listTools();
		out[name] = r.tools.map(t => t.name);
	} catch (e) {
		out[name] = 'error: ' + e.message + ' stderr: ' + err;
	}
	await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out));
`

func runTSClient(t *testing.T, prefix, file, caps, cwd, homeDir string) map[string]any {
	t.Helper()
	script := filepath.Join(prefix, "ts-client-e2e.mjs")
	if err := os.WriteFile(script, []byte(tsClient), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, file, caps, cwd)
	cmd.Env = []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER")}
	cmd.WaitDelay = 15 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript SDK client: %v\n%s", err, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("TypeScript SDK client printed %q: %v", out, err)
	}
	return res
}

// TestRealClientsAfterFix: servers added with Claude Code's own `claude mcp
// add`, caged by `protect --fix` on a fake HOME, all connect on their first
// start in `claude mcp list` (its default timeout) and in the TypeScript
// SDK's client (its default environment); unwrap then restores the entries.
func TestRealClientsAfterFix(t *testing.T) {
	prefix := npmClients(t)
	claude := filepath.Join(prefix, "node_modules", ".bin", "claude")
	dir := stateDir(t)
	homeDir := filepath.Join(dir, "home")
	t.Setenv("MCPCAGE_HOME", filepath.Join(dir, "mcpcage"))
	writeFile(t, filepath.Join(homeDir, "notes", "a.txt"), "a note")
	proj := filepath.Join(dir, "src", "app")
	writeFile(t, filepath.Join(proj, "README"), "the project")

	clientEnv := []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER"), "DISABLE_AUTOUPDATER=1"}
	claudeRun := claudeRunner(t, claude, clientEnv, proj)
	servers := map[string][]string{
		"everything": {"npx", "-y", everything},
		"memory":     {"npx", "-y", memory},
		"notes":      {"npx", "-y", filesystem, "~/notes"},
		"here":       {"npx", "--yes", filesystem, "."},
		"thinking":   {"npx", "-y", thinking},
	}
	for name, argv := range servers {
		claudeRun(append([]string{"mcp", "add", "--scope", "user", name, "--"}, argv...)...)
	}
	cfg := filepath.Join(homeDir, ".claude.json")
	before, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}

	exe, err := exec.LookPath("mcpcage")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	opts := &ProtectOptions{
		IO:         &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Layout:     clients.Layout{OS: "linux", Home: homeDir, Getenv: func(string) string { return "" }},
		ProjectDir: proj, Clients: []string{"claude-code"},
		Fix: true, Yes: true, Exe: exe, Now: time.Now,
	}
	start := time.Now()
	if err := protectRun(opts); err != nil {
		t.Fatalf("protect --fix: %v\n%s%s", err, out.String(), errOut.String())
	}
	t.Logf("protect --fix of %d servers (%d packages) took %s", len(servers), 4, time.Since(start).Round(time.Second))
	if !strings.Contains(out.String(), "Caged 5 servers in 1 file. Installed 4 packages in ") {
		t.Fatalf("protect --fix said:\n%s\n%s", out.String(), errOut.String())
	}

	// Claude Code checks each server with its own connect timeout.
	list := claudeRun("mcp", "list")
	for name := range servers {
		line := ""
		for _, l := range strings.Split(list, "\n") {
			if strings.HasPrefix(l, name+": ") {
				line = l
			}
		}
		if !strings.Contains(line, "mcpcage run --name="+name) || !strings.Contains(line, "Connected") {
			t.Errorf("claude mcp list, %s: %q\nfull output:\n%s", name, line, list)
		}
	}

	// The TypeScript SDK's client, started in the project.
	res := runTSClient(t, prefix, cfg, `{}`, proj, homeDir)
	for name := range servers {
		tools, ok := res[name].([]any)
		if !ok || len(tools) == 0 {
			t.Errorf("TypeScript SDK client, %s: %v", name, res[name])
		}
	}
	// The same servers from a client that can sample, elicit and give
	// roots: server-everything offers it more tools, which is no change.
	bare, _ := res["everything"].([]any)
	rich := runTSClient(t, prefix, cfg, `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`, proj, homeDir)
	more, ok := rich["everything"].([]any)
	if !ok || len(more) <= len(bare) {
		t.Errorf("TypeScript SDK client with sampling, elicitation and roots: %v (bare: %d tools)", rich["everything"], len(bare))
	}
	// And the go-sdk client, with its own capabilities, after both.
	cs, stderr := startEntry(t, readServers(t, "claude-code", cfg)["everything"], homeDir, proj)
	if names := toolNames(t, cs, stderr); !contains(names, "echo") {
		t.Errorf("go-sdk client after the TypeScript ones: %v\n%s", names, stderr.String())
	}
	cs.Close()

	// unwrap gives back the entries exactly as Claude Code wrote them.
	uo := &UnwrapOptions{ProtectOptions{IO: opts.IO, Layout: opts.Layout, ProjectDir: proj, Clients: opts.Clients, Yes: true, Now: time.Now}}
	if err := unwrapRun(uo); err != nil {
		t.Fatalf("unwrap: %v\n%s", err, errOut.String())
	}
	after, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		// Claude Code rewrites its file as it runs (counters, caches):
		// what mcpcage changed, the entries, must be as they were.
		c := clients.Lookup("claude-code")
		a, _ := clients.Read(c.Format, before, c.Tables)
		b, _ := clients.Read(c.Format, after, c.Tables)
		if len(a) != len(b) {
			t.Fatalf("unwrap: %d entries became %d", len(a), len(b))
		}
		for i := range a {
			if a[i].Command != b[i].Command || strings.Join(a[i].Args, "\x00") != strings.Join(b[i].Args, "\x00") {
				t.Errorf("unwrap: %s is %s %q, was %s %q", a[i].Name, b[i].Command, b[i].Args, a[i].Command, a[i].Args)
			}
		}
	}
}
