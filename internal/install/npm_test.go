package install

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/progress"
)

const seqThinking = "@modelcontextprotocol/server-sequential-thinking"

// A real MCP server from the npm registry: installed once, then served from
// the cache, then reinstalled only when asked.
func TestNPMInstallCacheUpdate(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ctx := context.Background()

	var log bytes.Buffer
	first, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: seqThinking, Stderr: &log, Progress: progress.New(&log, progress.Brief, false)})
	if err != nil {
		t.Fatalf("install: %v\n%s", err, log.String())
	}
	if !first.Installed {
		t.Fatal("first Ensure did not install")
	}
	if !exactVersion(first.Version) || first.Package != seqThinking {
		t.Fatalf("resolved %q %q", first.Package, first.Version)
	}
	if first.Command[0] != "node" || !strings.HasPrefix(first.Command[1], MountPoint+"/node_modules/"+seqThinking+"/") {
		t.Fatalf("command %q", first.Command)
	}
	if _, err := os.Stat(filepath.Join(first.CacheDir, "node_modules", seqThinking, "package.json")); err != nil {
		t.Fatalf("package not in the cache: %v", err)
	}
	if !strings.Contains(log.String(), "installing "+seqThinking) || !strings.Contains(log.String(), "installed "+seqThinking+" "+first.Version+" (in ") {
		t.Errorf("no start and end lines: %q", log.String())
	}

	tools := listTools(t, cli, first)
	if !slices.Contains(tools, "sequentialthinking") {
		t.Fatalf("tools/list in a network-less cage gave %q", tools)
	}

	// Cached: no container, same code, and no network needed: a registry that
	// does not exist would fail any install.
	t.Setenv("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9/")
	again, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: seqThinking})
	if err != nil {
		t.Fatalf("cached Ensure: %v", err)
	}
	if again.Installed || again.Version != first.Version || again.CacheDir != first.CacheDir {
		t.Fatalf("second Ensure: installed=%v version %s dir %s, want cached %s %s", again.Installed, again.Version, again.CacheDir, first.Version, first.CacheDir)
	}
	latest, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: seqThinking + "@latest"})
	if err != nil || latest.Installed || latest.Version != first.Version {
		t.Fatalf("@latest should run the recorded version from the cache: %+v %v", latest, err)
	}
	t.Setenv("NPM_CONFIG_REGISTRY", "")

	// An explicit other version installs that version next to the first.
	const older = "2025.12.18"
	if first.Version == older {
		t.Fatalf("registry's latest is the fixed older version %s; pick another", older)
	}
	old, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: seqThinking + "@" + older})
	if err != nil {
		t.Fatal(err)
	}
	if !old.Installed || old.Version != older || old.CacheDir == first.CacheDir {
		t.Fatalf("explicit version: %+v", old)
	}
	// ...and becomes what an unversioned start runs.
	rec, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: seqThinking})
	if err != nil || rec.Installed || rec.Version != older {
		t.Fatalf("after an explicit version, the unversioned spec ran %+v %v", rec, err)
	}

	// --update resolves anew.
	upd, err := Ensure(ctx, cli, Request{Kind: "npx", Spec: seqThinking, Update: true})
	if err != nil {
		t.Fatal(err)
	}
	if !upd.Installed || upd.Version != first.Version || upd.CacheDir != first.CacheDir {
		t.Fatalf("--update: %+v, want a fresh install of %s at %s", upd, first.Version, first.CacheDir)
	}
	if _, err := os.Stat(filepath.Join(upd.CacheDir, "node_modules", seqThinking, "package.json")); err != nil {
		t.Fatalf("package not in the cache after --update: %v", err)
	}
	// The replaced entry stays readable for a server still running from it.
	set, _ := filepath.Glob(filepath.Join(os.Getenv("MCPCAGE_HOME"), "packages", "tmp", "replaced-*", "pkg", "node_modules", seqThinking, "package.json"))
	if len(set) != 1 {
		t.Fatalf("the replaced entry was not set aside: %q", set)
	}
}

func TestNPMNotFound(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	_, err := Ensure(context.Background(), cli, Request{Kind: "npx", Spec: "@modelcontextprotocol/server-sequential-thinking@0.0.0-mcpcage-none"})
	var nf *NotFoundError
	if !errorsAs(err, &nf) {
		t.Fatalf("got %v, want NotFoundError", err)
	}
}

// exactVersion reports whether v names one release, by the launch grammar.
func exactVersion(v string) bool {
	sp, err := launch.ParseSpec("npx", "x@"+v)
	return err == nil && sp.Exact
}
