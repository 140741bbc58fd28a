package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
	"github.com/mcpcage/mcpcage/internal/install/installtest"
)

// A stdlib-only MCP stdio server, packaged into a wheel by the test.
const uvxServerPy = `import json, sys

def main():
    for line in sys.stdin:
        m = json.loads(line)
        if "id" not in m:
            continue
        if m.get("method") == "initialize":
            r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
                 "serverInfo": {"name": "uvx-demo", "version": "1.0.0"}}
        elif m.get("method") == "tools/list":
            r = {"tools": [{"name": "python_tool", "description": "a tool served by Python in a cage", "inputSchema": {"type": "object"}}]}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no such method"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`

// localIndex serves a PEP 503 simple index of files on the Docker bridge
// address of this machine (the install container reaches it there).
func localIndex(t *testing.T, files map[string]map[string][]byte) *installtest.Index {
	t.Helper()
	ctx := context.Background()
	cli, err := cage.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	gw, err := cagetest.BridgeGateway(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	ix := installtest.StartIndex(t, gw)
	for project, fs := range files {
		for name, b := range fs {
			ix.Add(project, name, b)
		}
	}
	return ix
}

// TestRunUvx: a Python server built into a wheel here, served from a local
// index, installed wheels-only and caged, lists its tools to the official
// client; a package that exists only as source is refused without being
// downloaded.
func TestRunUvx(t *testing.T) {
	name, whl := installtest.Wheel(t, "mcpcage-uvx-demo", "1.0.0", map[string]string{"uvx_demo/__init__.py": uvxServerPy},
		map[string]string{"mcpcage-uvx-demo": "uvx_demo:main"})
	ix := localIndex(t, map[string]map[string][]byte{
		"mcpcage-uvx-demo":    {name: whl},
		"mcpcage-source-only": {"mcpcage-source-only-1.0.0.tar.gz": []byte("not a real sdist: must never be fetched")},
	})
	url, host := ix.URL, ix.Host()
	env := []string{"PIP_INDEX_URL=" + url, "PIP_TRUSTED_HOST=" + host, "UV_INDEX_URL=" + url, "UV_INSECURE_HOST=" + host}
	dir := stateDir(t)

	cs, stderr := caged(t, dir, env, "--", "uvx", "mcpcage-uvx-demo")
	if names := toolNames(t, cs, stderr); len(names) != 1 || names[0] != "python_tool" {
		t.Fatalf("tools %v\nstderr:\n%s", names, stderr.String())
	}
	cs.Close()

	cmd := exec.Command("mcpcage", "run", "--", "uvx", "mcpcage-source-only")
	cmd.Env = testEnv(dir, env...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() { <-ctx.Done(); cmd.Process.Kill() }()
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitCageError {
		t.Errorf("source-only package: %v, want exit %d\n%s", err, exitCageError, errOut.String())
	}
	if !strings.Contains(errOut.String(), `installs only from source`) || !strings.Contains(errOut.String(), "installing it would run its code") {
		t.Errorf("stderr does not give the reason:\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), `"id":1,"error"`) || !strings.Contains(out.String(), "installs only from source") {
		t.Errorf("the waiting client got no error: %s", out.String())
	}
	for _, p := range ix.Requested() {
		if strings.HasSuffix(p, ".tar.gz") {
			t.Errorf("the sdist was downloaded: %s", p)
		}
	}
}
