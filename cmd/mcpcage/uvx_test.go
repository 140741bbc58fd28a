package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
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

// pureWheel builds a py3-none-any wheel with one console script.
func pureWheel(t *testing.T, name, version string, files map[string]string, script string) (string, []byte) {
	t.Helper()
	dist := strings.ReplaceAll(name, "-", "_")
	info := dist + "-" + version + ".dist-info/"
	all := map[string]string{
		info + "METADATA":         "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n",
		info + "WHEEL":            "Wheel-Version: 1.0\nGenerator: mcpcage-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		info + "entry_points.txt": "[console_scripts]\n" + name + " = " + script + "\n",
	}
	for k, v := range files {
		all[k] = v
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	var record strings.Builder
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(all[n]))
		sum := sha256.Sum256([]byte(all[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[n]))
	}
	record.WriteString(info + "RECORD,,\n")
	w, _ := zw.Create(info + "RECORD")
	w.Write([]byte(record.String()))
	zw.Close()
	return dist + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// localIndex serves a PEP 503 simple index on the Docker bridge address of
// this machine (the install container reaches it there) and records what was
// downloaded.
func localIndex(t *testing.T, files map[string]map[string][]byte) (url string, fetched func() []string) {
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
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var mu = make(chan struct{}, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu <- struct{}{}
		got = append(got, r.URL.Path)
		<-mu
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		switch {
		case len(parts) == 2 && parts[0] == "simple" && files[parts[1]] != nil:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
			for name, b := range files[parts[1]] {
				sum := sha256.Sum256(b)
				fmt.Fprintf(w, "<a href=\"/files/%s/%s#sha256=%s\">%s</a><br>\n", parts[1], name, hex.EncodeToString(sum[:]), name)
			}
			fmt.Fprint(w, "</body></html>\n")
		case len(parts) == 3 && parts[0] == "files" && files[parts[1]][parts[2]] != nil:
			w.Write(files[parts[1]][parts[2]])
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/simple", func() []string {
		mu <- struct{}{}
		defer func() { <-mu }()
		return append([]string(nil), got...)
	}
}

// TestRunUvx: a Python server built into a wheel here, served from a local
// index, installed wheels-only and caged, lists its tools to the official
// client; a package that exists only as source is refused without being
// downloaded.
func TestRunUvx(t *testing.T) {
	name, whl := pureWheel(t, "mcpcage-uvx-demo", "1.0.0", map[string]string{"uvx_demo/__init__.py": uvxServerPy}, "uvx_demo:main")
	url, fetched := localIndex(t, map[string]map[string][]byte{
		"mcpcage-uvx-demo":    {name: whl},
		"mcpcage-source-only": {"mcpcage-source-only-1.0.0.tar.gz": []byte("not a real sdist: must never be fetched")},
	})
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/simple")
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
	for _, p := range fetched() {
		if strings.HasSuffix(p, ".tar.gz") {
			t.Errorf("the sdist was downloaded: %s", p)
		}
	}
}
