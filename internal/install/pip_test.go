package install

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/install/installtest"
	"github.com/mcpcage/mcpcage/internal/progress"
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

func usePyPIIndex(t *testing.T, ix *installtest.Index) {
	t.Setenv("PIP_INDEX_URL", ix.URL)
	t.Setenv("PIP_TRUSTED_HOST", ix.Host())
}

func demoIndex(t *testing.T, addr string) *installtest.Index {
	ix := installtest.StartIndex(t, addr)
	for _, v := range []string{"0.9.0", "1.0.0"} {
		f, b := installtest.Wheel(t, "mcpcage-demo-server", v, map[string]string{"demo_mcp/__init__.py": demoServerPy},
			map[string]string{"mcpcage-demo-server": "demo_mcp:main"})
		ix.Add("mcpcage-demo-server", f, b)
	}
	// Only an sdist: building it would run its setup.py.
	ix.Add("mcpcage-source-only", "mcpcage-source-only-1.0.0.tar.gz", []byte("not a real sdist: must never be fetched"))
	f, b := installtest.Wheel(t, "mcpcage-needs-source", "1.0.0", map[string]string{"needs/__init__.py": "def main(): pass\n"},
		map[string]string{"mcpcage-needs-source": "needs:main"}, "mcpcage-source-only")
	ix.Add("mcpcage-needs-source", f, b)
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
	for _, p := range ix.Requested() {
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
	for _, p := range ix.Requested() {
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
	ix.Auth = "mirror-user:s3cret-token"
	usePyPIIndex(t, ix)
	t.Setenv("PIP_INDEX_URL", strings.Replace(ix.URL, "http://", "http://"+ix.Auth+"@", 1))
	ctx := context.Background()

	var log bytes.Buffer
	res, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server", Stderr: &log, Progress: progress.New(&log, progress.Brief, false)})
	if err != nil || res.Version != "1.0.0" {
		t.Fatalf("install through an index with credentials: %+v %v\n%s", res, err, log.String())
	}
	_, err = Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-source-only", Stderr: &log, Progress: progress.New(&log, progress.Brief, false)})
	var so *SourceOnlyError
	if !errorsAs(err, &so) {
		t.Fatalf("source-only package behind credentials: %v", err)
	}
	_, err = Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-no-such-package", Stderr: &log, Progress: progress.New(&log, progress.Brief, false)})
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

// uvx --from PKG CMD: a package with several commands, none of its own name,
// installs, and the named one runs.
func TestUVXFromNamedCommand(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ix := installtest.StartIndex(t, bridgeAddr(t, cli))
	f, b := installtest.Wheel(t, "mcpcage-two-commands", "1.0.0", map[string]string{"demo_mcp/__init__.py": demoServerPy},
		map[string]string{"two-serve": "demo_mcp:main", "two-admin": "demo_mcp:main"})
	ix.Add("mcpcage-two-commands", f, b)
	usePyPIIndex(t, ix)
	ctx := context.Background()
	var log bytes.Buffer
	if _, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-two-commands", Stderr: &log}); err == nil || !strings.Contains(err.Error(), "several commands") {
		t.Fatalf("without a command named: %v", err)
	}
	res, err := Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-two-commands", Bin: "two-serve", Stderr: &log})
	if err != nil {
		t.Fatalf("install: %v\n%s", err, log.String())
	}
	if want := []string{MountPoint + "/venv/bin/two-serve"}; !slices.Equal(res.Command, want) {
		t.Fatalf("command %q, want %q", res.Command, want)
	}
	if tools := listTools(t, cli, res); !slices.Equal(tools, []string{"add"}) {
		t.Fatalf("tools %q", tools)
	}
	// From the cache now; a command it does not have is named with those it has.
	_, err = Ensure(ctx, cli, Request{Kind: "uvx", Spec: "mcpcage-two-commands", Bin: "nope", Stderr: &log})
	if err == nil || !strings.Contains(err.Error(), `has no command "nope"; it has: `) || !strings.Contains(err.Error(), "two-admin, two-serve") {
		t.Fatalf("unknown command: %v", err)
	}
}

// TestUVXIndexUnreachable: an index nobody answers at is "cannot be
// reached", never "package not found" (pip.go's driver used to take any
// failure to ask the index as an empty project).
func TestUVXIndexUnreachable(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	// The install container's own loopback: nothing listens there.
	t.Setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
	_, err := Ensure(context.Background(), cli, Request{Kind: "uvx", Spec: "mcpcage-demo-server", Stderr: io.Discard})
	var nf *NotFoundError
	if err == nil || errors.As(err, &nf) {
		t.Fatalf("want an unreachable index, got %v", err)
	}
	if want := "cannot install mcpcage-demo-server: the package index 127.0.0.1 cannot be reached (["; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want it to start %q", err, want)
	}
}
