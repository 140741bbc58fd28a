package install

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// demoServerPy is a stdlib-only MCP stdio server with one tool.
const demoServerPy = `import json, sys

def main():
    for line in sys.stdin:
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if "id" not in m:
            continue
        if m.get("method") == "initialize":
            r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
                 "serverInfo": {"name": "demo", "version": "1.0.0"}}
        elif m.get("method") == "tools/list":
            r = {"tools": [{"name": "add", "description": "add two numbers", "inputSchema": {"type": "object"}}]}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no such method"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`

// wheel builds a pure-Python wheel per the binary distribution format spec.
func wheel(t *testing.T, name, version string, files map[string]string, scripts map[string]string, requires ...string) (string, []byte) {
	t.Helper()
	dist := strings.ReplaceAll(name, "-", "_")
	info := dist + "-" + version + ".dist-info/"
	meta := "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
	for _, r := range requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	all := map[string]string{}
	for k, v := range files {
		all[k] = v
	}
	all[info+"METADATA"] = meta
	all[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: mcpcage-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	if len(scripts) > 0 {
		ep := "[console_scripts]\n"
		for k, v := range scripts {
			ep += k + " = " + v + "\n"
		}
		all[info+"entry_points.txt"] = ep
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	var record strings.Builder
	var buf bytes.Buffer
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

// pypiIndex is a PEP 503 simple index on this machine's bridge address.
type pypiIndex struct {
	testRegistry
	files map[string]map[string][]byte // project -> file name -> bytes
	auth  string                       // "user:password" the index requires, or ""
}

func startPyPIIndex(t *testing.T, addr string) *pypiIndex {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listen on the bridge address: %v", err)
	}
	ix := &pypiIndex{files: map[string]map[string][]byte{}}
	ix.URL = "http://" + ln.Addr().String() + "/simple"
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ix.mu.Lock()
		ix.requests = append(ix.requests, r.URL.Path)
		ix.mu.Unlock()
		if ix.auth != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u+":"+p != ix.auth {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		switch {
		case len(parts) == 2 && parts[0] == "simple":
			proj := ix.files[parts[1]]
			if proj == nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
			for name, b := range proj {
				sum := sha256.Sum256(b)
				fmt.Fprintf(w, "<a href=\"/files/%s/%s#sha256=%s\">%s</a><br>\n", parts[1], html.EscapeString(name), hex.EncodeToString(sum[:]), html.EscapeString(name))
			}
			fmt.Fprint(w, "</body></html>\n")
		case len(parts) == 3 && parts[0] == "files":
			if b, ok := ix.files[parts[1]][parts[2]]; ok {
				w.Write(b)
				return
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ix
}

func (ix *pypiIndex) add(project, file string, b []byte) {
	if ix.files[project] == nil {
		ix.files[project] = map[string][]byte{}
	}
	ix.files[project][file] = b
}

func usePyPIIndex(t *testing.T, ix *pypiIndex) {
	t.Setenv("PIP_INDEX_URL", ix.URL)
	t.Setenv("PIP_TRUSTED_HOST", strings.TrimSuffix(strings.TrimPrefix(ix.URL, "http://"), "/simple"))
}

func demoIndex(t *testing.T, addr string) *pypiIndex {
	ix := startPyPIIndex(t, addr)
	for _, v := range []string{"0.9.0", "1.0.0"} {
		f, b := wheel(t, "mcpcage-demo-server", v, map[string]string{"demo_mcp/__init__.py": demoServerPy},
			map[string]string{"mcpcage-demo-server": "demo_mcp:main"})
		ix.add("mcpcage-demo-server", f, b)
	}
	// Only an sdist: building it would run its setup.py.
	ix.add("mcpcage-source-only", "mcpcage-source-only-1.0.0.tar.gz", []byte("not a real sdist: must never be fetched"))
	f, b := wheel(t, "mcpcage-needs-source", "1.0.0", map[string]string{"needs/__init__.py": "def main(): pass\n"},
		map[string]string{"mcpcage-needs-source": "needs:main"}, "mcpcage-source-only")
	ix.add("mcpcage-needs-source", f, b)
	return ix
}

// A Python MCP server built into a wheel here, served from a local index:
// installed into a virtualenv in the cache, and it runs in a network-less,
// read-only container.
func TestUVXInstallFromLocalIndex(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ix := demoIndex(t, bridgeAddr(t, cli))
	usePyPIIndex(t, ix)
	ctx := context.Background()

	var log bytes.Buffer
	// Typed as users do, normalised as PEP 503 says.
	res, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "MCPcage_Demo.Server", Stderr: &log})
	if err != nil {
		t.Fatalf("install: %v\n%s", err, log.String())
	}
	if !res.Installed || res.Package != "mcpcage-demo-server" || res.Version != "1.0.0" {
		t.Fatalf("resolved %+v", res)
	}
	if want := []string{MountPoint + "/venv/bin/mcpcage-demo-server"}; !slices.Equal(res.Command, want) {
		t.Fatalf("command %q, want %q", res.Command, want)
	}
	if tools := listTools(t, cli, res); !slices.Equal(tools, []string{"add"}) {
		t.Fatalf("tools %q", tools)
	}

	// Cached, by the recorded version, with the index gone.
	t.Setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
	again, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server"})
	if err != nil || again.Installed || again.Version != "1.0.0" || again.CacheDir != res.CacheDir {
		t.Fatalf("cached Ensure: %+v %v", again, err)
	}
	usePyPIIndex(t, ix)
	old, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server==0.9.0"})
	if err != nil || !old.Installed || old.Version != "0.9.0" {
		t.Fatalf("explicit version: %+v %v", old, err)
	}
	for _, p := range ix.requested() {
		if strings.HasSuffix(p, ".tar.gz") {
			t.Fatalf("an sdist was downloaded: %s", p)
		}
	}

	// PEP 440 spells 1.0.0.0 and 1.0.0 the same release: one install, then
	// the cache.
	alias, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server==1.0.0.0"})
	if err != nil || alias.Version != "1.0.0" {
		t.Fatalf("==1.0.0.0: %+v %v", alias, err)
	}
	alias2, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server==1.0.0.0"})
	if err != nil || alias2.Installed || alias2.CacheDir != alias.CacheDir {
		t.Fatalf("==1.0.0.0 again was not served from the cache: %+v %v", alias2, err)
	}
	// Extras install other things, so they are another entry.
	extra, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server[CLI]==1.0.0"})
	if err != nil || !extra.Installed || extra.CacheDir == res.CacheDir || extra.Package != "mcpcage-demo-server" {
		t.Fatalf("with extras: %+v %v", extra, err)
	}
}

func TestUVXSourceOnlyRefused(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ix := demoIndex(t, bridgeAddr(t, cli))
	usePyPIIndex(t, ix)
	ctx := context.Background()

	for _, tc := range []struct{ spec, pkg, msg string }{
		{"mcpcage-source-only", "mcpcage-source-only", `"mcpcage-source-only" installs only from source`},
		{"mcpcage-needs-source", "mcpcage-source-only", `"mcpcage-source-only" (needed by "mcpcage-needs-source") installs only from source`},
	} {
		_, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: tc.spec})
		var so *SourceOnlyError
		if !errorsAs(err, &so) || so.Package != tc.pkg {
			t.Fatalf("%s: got %v, want SourceOnlyError for %s", tc.spec, err, tc.pkg)
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "installing it would run its code") {
			t.Errorf("%s: message %q", tc.spec, err)
		}
	}
	for _, p := range ix.requested() {
		if strings.HasSuffix(p, ".tar.gz") {
			t.Fatalf("an sdist was downloaded: %s", p)
		}
	}
	root := filepath.Join(os.Getenv("MCPCAGE_HOME"), "packages", "uvx")
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("a refused package left %d cache entries", len(ents))
	}
	_, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-no-such-package"})
	var nf *NotFoundError
	if !errorsAs(err, &nf) {
		t.Fatalf("missing package: got %v, want NotFoundError", err)
	}
}

// An index that needs credentials, given in the index URL as pip takes them:
// the install works, the refusal still names the reason, and the secret is
// never printed.
func TestUVXIndexWithCredentials(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ix := demoIndex(t, bridgeAddr(t, cli))
	ix.auth = "mirror-user:s3cret-token"
	usePyPIIndex(t, ix)
	t.Setenv("PIP_INDEX_URL", strings.Replace(ix.URL, "http://", "http://"+ix.auth+"@", 1))
	ctx := context.Background()

	var log bytes.Buffer
	res, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server", Stderr: &log})
	if err != nil || res.Version != "1.0.0" {
		t.Fatalf("install through an index with credentials: %+v %v\n%s", res, err, log.String())
	}
	_, err = Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-source-only", Stderr: &log})
	var so *SourceOnlyError
	if !errorsAs(err, &so) {
		t.Fatalf("source-only package behind credentials: %v", err)
	}
	_, err = Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-no-such-package", Stderr: &log})
	if err == nil {
		t.Fatal("installed a missing package")
	}
	if strings.Contains(log.String()+err.Error(), "s3cret") {
		t.Fatalf("the index credentials were printed:\n%s\n%v", log.String(), err)
	}
	if !strings.Contains(log.String(), "http://***@") {
		t.Errorf("progress does not show the redacted index: %s", log.String())
	}
}
