package install

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/progress"
)

// npmPackage is one version of a package the test registry serves.
type npmPackage struct {
	name, version string
	manifest      map[string]any    // package.json fields besides name and version
	files         map[string]string // path in the package -> contents
}

// npmRegistry is a tiny npm registry on this machine's bridge address, so
// that install containers can reach it and nothing else can.
type testRegistry struct {
	URL      string
	mu       sync.Mutex
	requests []string
	hold     chan struct{} // when set, tarball requests wait until it is closed
}

func (r *testRegistry) requested() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

func startNPMRegistry(t *testing.T, addr string, pkgs ...npmPackage) *testRegistry {
	return startNPMRegistryTB(t, addr, pkgs...)
}

func startNPMRegistryTB(t testing.TB, addr string, pkgs ...npmPackage) *testRegistry {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listen on the bridge address: %v", err)
	}
	reg := &testRegistry{URL: "http://" + ln.Addr().String() + "/"}
	packuments := map[string]map[string]any{}
	tarballs := map[string][]byte{}
	for _, p := range pkgs {
		tgz := npmTarball(t, p)
		sha := sha512.Sum512(tgz)
		sha1sum := sha1.Sum(tgz)
		file := strings.ReplaceAll(p.name, "/", "-") + "-" + p.version + ".tgz"
		tarPath := "/" + p.name + "/-/" + file
		tarballs[tarPath] = tgz
		man := map[string]any{"name": p.name, "version": p.version}
		for k, v := range p.manifest {
			man[k] = v
		}
		man["dist"] = map[string]any{
			"tarball":   strings.TrimSuffix(reg.URL, "/") + tarPath,
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha[:]),
			"shasum":    hex.EncodeToString(sha1sum[:]),
		}
		pm := packuments[p.name]
		if pm == nil {
			pm = map[string]any{"name": p.name, "versions": map[string]any{}, "dist-tags": map[string]any{}}
			packuments[p.name] = pm
		}
		pm["versions"].(map[string]any)[p.version] = man
		pm["dist-tags"].(map[string]any)["latest"] = p.version
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p, _ := url.PathUnescape(req.URL.EscapedPath())
		reg.mu.Lock()
		reg.requests = append(reg.requests, p)
		reg.mu.Unlock()
		if tgz, ok := tarballs[p]; ok {
			if reg.hold != nil {
				select {
				case <-reg.hold:
				case <-req.Context().Done():
					return
				}
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz)
			return
		}
		if pm, ok := packuments[strings.TrimPrefix(p, "/")]; ok {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(pm)
			return
		}
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return reg
}

func npmTarball(t testing.TB, p npmPackage) []byte {
	t.Helper()
	man := map[string]any{"name": p.name, "version": p.version}
	for k, v := range p.manifest {
		man[k] = v
	}
	pj, _ := json.MarshalIndent(man, "", "  ")
	files := map[string]string{"package.json": string(pj)}
	for k, v := range p.files {
		files[k] = v
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		mode := int64(0o644)
		if strings.HasSuffix(n, ".js") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[n]))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// fixtureServerJS is a minimal MCP stdio server with one tool.
const fixtureServerJS = `#!/usr/bin/env node
const rl = require('readline').createInterface({input: process.stdin});
const send = m => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', line => {
  let m; try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  if (m.method === 'initialize') send({jsonrpc: '2.0', id: m.id, result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'fixture', version: '1.0.0'}}});
  else if (m.method === 'tools/list') send({jsonrpc: '2.0', id: m.id, result: {tools: [{name: 'echo', description: 'echo', inputSchema: {type: 'object'}}]}});
  else send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'no such method'}});
});
`

// hookJS leaves a mark in the package mount when an install script runs.
const hookJS = `require('fs').writeFileSync('/srv/pkg/HOOK-' + process.argv[2], 'ran');`

func fixturePackages() []npmPackage {
	return []npmPackage{
		{
			name: "mcpcage-fixture-server", version: "1.0.0",
			manifest: map[string]any{
				"bin":          map[string]any{"mcpcage-fixture-server": "server.js"},
				"dependencies": map[string]any{"mcpcage-fixture-hook": "^1.0.0", "@mcpcage-fixture/native": "1.0.0"},
			},
			files: map[string]string{"server.js": fixtureServerJS},
		},
		{
			name: "mcpcage-fixture-hook", version: "1.0.0",
			manifest: map[string]any{
				"bin":     "server.js",
				"scripts": map[string]any{"preinstall": "node hook.js pre", "postinstall": "node hook.js post", "test": "true"},
			},
			files: map[string]string{"server.js": fixtureServerJS, "hook.js": hookJS},
		},
		{
			name: "@mcpcage-fixture/native", version: "1.0.0",
			files: map[string]string{"binding.gyp": `{"targets":[]}`, "index.js": "module.exports = 1;"},
		},
	}
}

// Install scripts never run by default, and the packages that had them are
// named; the registry the user configured is the one used.
func TestNPMInstallScriptsSkipped(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	reg := startNPMRegistry(t, bridgeAddr(t, cli), fixturePackages()...)
	t.Setenv("NPM_CONFIG_REGISTRY", reg.URL)

	var log bytes.Buffer
	res, err := Ensure(context.Background(), cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server", Stderr: &log, Progress: progress.New(&log, progress.Brief, false)})
	if err != nil {
		t.Fatalf("install: %v\n%s", err, log.String())
	}
	if res.Version != "1.0.0" {
		t.Fatalf("version %q", res.Version)
	}
	for _, mark := range []string{"HOOK-pre", "HOOK-post"} {
		if _, err := os.Stat(filepath.Join(res.CacheDir, mark)); err == nil {
			t.Fatalf("an install script ran (%s exists)", mark)
		}
	}
	warn := log.String()
	for _, want := range []string{
		"mcpcage: warning: install scripts of 2 package(s) were not run",
		"mcpcage-fixture-hook@1.0.0 (preinstall, postinstall)",
		"@mcpcage-fixture/native@1.0.0 (install (node-gyp))",
		"--allow-scripts",
	} {
		if !strings.Contains(warn, want) {
			t.Errorf("warning lacks %q:\n%s", want, warn)
		}
	}
	if !strings.Contains(warn, "from http://") {
		t.Errorf("progress does not name the configured registry: %s", warn)
	}
	if !slices.Contains(reg.requested(), "/mcpcage-fixture-server") {
		t.Errorf("the configured registry was not asked: %q", reg.requested())
	}
	if tools := listTools(t, cli, res); !slices.Equal(tools, []string{"echo"}) {
		t.Fatalf("tools %q", tools)
	}
}

func TestNPMInstallScriptsAllowed(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	reg := startNPMRegistry(t, bridgeAddr(t, cli), fixturePackages()...)
	t.Setenv("NPM_CONFIG_REGISTRY", reg.URL)

	var log bytes.Buffer
	res, err := Ensure(context.Background(), cli, Request{Kind: "npx", Spec: "mcpcage-fixture-hook@1.0.0", AllowScripts: true, Stderr: &log})
	if err != nil {
		t.Fatalf("install: %v\n%s", err, log.String())
	}
	if _, err := os.Stat(filepath.Join(res.CacheDir, "HOOK-post")); err != nil {
		t.Fatalf("with AllowScripts the postinstall script did not run: %v", err)
	}
	if strings.Contains(log.String(), "warning") {
		t.Errorf("warned although scripts ran: %s", log.String())
	}
}

// Concurrent starts of one package install it once and share the entry.
func TestNPMConcurrentInstall(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	reg := startNPMRegistry(t, bridgeAddr(t, cli), fixturePackages()...)
	t.Setenv("NPM_CONFIG_REGISTRY", reg.URL)

	const n = 3
	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Ensure(context.Background(), cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server"})
		}()
	}
	wg.Wait()
	installed := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Ensure %d: %v", i, errs[i])
		}
		if results[i].CacheDir != results[0].CacheDir {
			t.Fatalf("different cache entries %s and %s", results[i].CacheDir, results[0].CacheDir)
		}
		if results[i].Installed {
			installed++
		}
	}
	if installed != 1 {
		t.Fatalf("%d of %d concurrent Ensure calls installed, want 1", installed, n)
	}
	root := filepath.Dir(filepath.Dir(results[0].CacheDir))
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Fatalf("cache holds %d entries, want 1", len(ents))
	}
	if ents, _ := os.ReadDir(filepath.Join(filepath.Dir(root), "tmp")); len(ents) != 0 {
		t.Fatalf("leftovers in tmp/: %v", ents)
	}
	if tools := listTools(t, cli, results[0]); !slices.Equal(tools, []string{"echo"}) {
		t.Fatalf("tools %q", tools)
	}
}

// BenchmarkEnsureCached is what a start of an installed package costs before
// its container starts: the image lookup and the cache entry.
func BenchmarkEnsureCached(b *testing.B) {
	isolate(b)
	cli := dockerClient(b)
	reg := startNPMRegistryTB(b, bridgeAddr(b, cli), fixturePackages()...)
	b.Setenv("NPM_CONFIG_REGISTRY", reg.URL)
	ctx := context.Background()
	if _, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server"})
		if err != nil || res.Installed {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// An install that is interrupted leaves no container, no cache entry and
// nothing in tmp/.
func TestInstallInterruptedLeavesNothing(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	reg := startNPMRegistry(t, bridgeAddr(t, cli), fixturePackages()...)
	reg.hold = make(chan struct{})
	defer close(reg.hold)
	t.Setenv("NPM_CONFIG_REGISTRY", reg.URL)

	run := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server", Labels: map[string]string{"io.mcpcage.test-run": run}})
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !slices.ContainsFunc(reg.requested(), func(p string) bool { return strings.HasSuffix(p, ".tgz") }) {
		if time.Now().After(deadline) {
			t.Fatal("the install never asked for a tarball")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The install container is running now.
	if n := countContainers(t, cli, run); n != 1 {
		t.Fatalf("%d install containers while installing, want 1", n)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an interrupted install succeeded")
	}
	if n := countContainers(t, cli, run); n != 0 {
		t.Fatalf("%d install containers left after the install was interrupted", n)
	}
	root := filepath.Join(os.Getenv("MCPCAGE_HOME"), "packages")
	for _, d := range []string{"npx", "tmp", "resolved"} {
		if ents, _ := os.ReadDir(filepath.Join(root, d)); len(ents) != 0 {
			t.Fatalf("%s/ holds %d entries after an interrupted install", d, len(ents))
		}
	}
}

func countContainers(t *testing.T, cli *client.Client, run string) int {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelInstall+"=1"), filters.Arg("label", "io.mcpcage.test-run="+run))})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// An image named by MCPCAGE_IMAGE_NODE is used as it is, even one that, like
// the official node image, has an entrypoint of its own and runs as root.
func TestImageOverrideWithEntrypoint(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ctx := context.Background()
	base, _, err := ImageFor(ctx, cli, "npx")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: base}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	tag := fmt.Sprintf("mcpcage-test/node-entrypoint:%d", time.Now().UnixNano())
	if _, err := cli.ContainerCommit(ctx, c.ID, container.CommitOptions{Reference: tag,
		Changes: []string{`ENTRYPOINT ["/bin/false"]`, "USER root"}}); err != nil {
		t.Fatal(err)
	}
	defer cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true})

	reg := startNPMRegistry(t, bridgeAddr(t, cli), fixturePackages()...)
	t.Setenv("NPM_CONFIG_REGISTRY", reg.URL)
	t.Setenv(EnvNodeImage, tag)
	res, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Image != tag {
		t.Fatalf("ran on %s, want the override %s", res.Image, tag)
	}
	info, err := os.Stat(filepath.Join(res.CacheDir, "node_modules", "mcpcage-fixture-server", "server.js"))
	if err != nil || info.Mode().Perm()&0o004 == 0 {
		t.Fatalf("installed file not readable by others: %v %v", info, err)
	}
	if tools := listTools(t, cli, res); !slices.Equal(tools, []string{"echo"}) {
		t.Fatalf("tools %q", tools)
	}
}

// A registry package whose dependencies come from a tarball URL of another
// host, or under another name (an npm alias), is refused by name, and
// nothing of it is cached; --allow-dependency NAME lets each through. A
// tree from the registry alone is kept with each package's source and
// integrity hash.
func TestNPMForeignDependencyRefused(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	addr := bridgeAddr(t, cli)
	// The tarball of "helper", served by another server than the registry.
	helper := npmPackage{name: "mcpcage-fixture-helper", version: "1.0.0", files: map[string]string{"index.js": "module.exports = 1;"}}
	tgz := npmTarball(t, helper)
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var elsewhere []string
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.URL.Path)
		mu.Unlock()
		w.Write(tgz)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	foreignURL := "http://" + ln.Addr().String() + "/helper.tgz"
	pkgs := append(fixturePackages(),
		npmPackage{
			name: "mcpcage-fixture-url", version: "1.0.0",
			manifest: map[string]any{"bin": "server.js", "dependencies": map[string]any{"helper": foreignURL}},
			files:    map[string]string{"server.js": fixtureServerJS},
		},
		npmPackage{
			name: "mcpcage-fixture-alias", version: "1.0.0",
			manifest: map[string]any{"bin": "server.js", "dependencies": map[string]any{"lodash": "npm:mcpcage-fixture-hook@1.0.0"}},
			files:    map[string]string{"server.js": fixtureServerJS},
		},
	)
	reg := startNPMRegistry(t, addr, pkgs...)
	t.Setenv("NPM_CONFIG_REGISTRY", reg.URL)

	for _, c := range []struct{ spec, dep, why string }{
		{"mcpcage-fixture-url", "helper", "from " + foreignURL + ", not the registry"},
		{"mcpcage-fixture-alias", "lodash", "is mcpcage-fixture-hook, installed under another name"},
	} {
		var log bytes.Buffer
		cached := func() int {
			m, _ := filepath.Glob(filepath.Join(os.Getenv("MCPCAGE_HOME"), "packages", "npx", "*"))
			return len(m)
		}
		before := cached()
		_, err := Ensure(context.Background(), cli, Request{Kind: "npx", Spec: c.spec, Stderr: &log})
		var fe *ForeignError
		if !errors.As(err, &fe) || !strings.Contains(fe.Detail, c.dep+" ("+c.why+")") || !strings.Contains(fe.Hint(), "--allow-dependency NAME") {
			t.Fatalf("%s: %v\n%s", c.spec, err, log.String())
		}
		if n := cached(); n != before {
			t.Errorf("%s: a refused install left an entry in the cache (%d, was %d)", c.spec, n, before)
		}
		res, err := Ensure(context.Background(), cli, Request{Kind: "npx", Spec: c.spec, AllowDeps: []string{c.dep}, Stderr: &log})
		if err != nil {
			t.Fatalf("%s with --allow-dependency %s: %v\n%s", c.spec, c.dep, err, log.String())
		}
		if tools := listTools(t, cli, res); !slices.Equal(tools, []string{"echo"}) {
			t.Errorf("%s: tools %q", c.spec, tools)
		}
	}
	// A tree from the registry alone: kept, with its hashes.
	res, err := Ensure(context.Background(), cli, Request{Kind: "npx", Spec: "mcpcage-fixture-server"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(res.CacheDir), "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Tree) != 3 {
		t.Fatalf("meta.json tree: %+v", m.Tree)
	}
	for _, e := range m.Tree {
		if !strings.HasPrefix(e.Resolved, reg.URL) || !strings.HasPrefix(e.Integrity, "sha512-") {
			t.Errorf("tree entry %+v", e)
		}
	}
}
