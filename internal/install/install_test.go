package install

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseReport(t *testing.T) {
	ok := "npm noise\nMCPCAGE-REPORT " + `{"name":"x","version":"1.2.3","command":["node","/srv/pkg/node_modules/x/cli.js"],"skipped":[{"name":"evil\u001b[2J\u202e\u009b","version":"1","scripts":["postinstall"]}]}` + "\n"
	r, err := ParseReport([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "1.2.3" || r.Skipped[0].Name != "evil<U+001B>[2J<U+202E><U+009B>" {
		t.Fatalf("%+v", r)
	}
	bad := []string{
		"",
		"no marker at all",
		`MCPCAGE-REPORT {"name":"x","version":"1.2.3","command":["/usr/bin/env","sh"],"skipped":[]}`,
		`MCPCAGE-REPORT {"name":"x","version":"1.2.3","command":["node","/srv/pkg/../../etc/passwd"],"skipped":[]}`,
		`MCPCAGE-REPORT {"name":"x","version":"1.2.3","command":["/srv/pkgx/run"],"skipped":[]}`,
		`MCPCAGE-REPORT {"name":"x","version":"1.2.3","command":[],"skipped":[]}`,
		`MCPCAGE-REPORT {"name":"x","version":"1.2.3 ; rm","command":["/srv/pkg/venv/bin/x"],"skipped":[]}`,
		`MCPCAGE-REPORT {"name":"x","version":"1.2.3","command":["/srv/pkg/venv/bin/x"],"skipped":[],"extra":1}`,
		`MCPCAGE-REPORT {"name":"x","version":"1","command":["/srv/pkg/venv/bin/x"]} {}`,
		`MCPCAGE-REPORT {"failure":{"kind":"rm -rf","package":"x","detail":""}}`,
	}
	for _, b := range bad {
		if r, err := ParseReport([]byte(b)); err == nil {
			t.Errorf("accepted %q as %+v", b, r)
		}
	}
	f, err := ParseReport([]byte(`MCPCAGE-REPORT {"name":"x","version":"","command":[],"skipped":[],"failure":{"kind":"source-only","package":"dep","detail":"no wheel"}}`))
	if err != nil || f.Failure == nil || f.Failure.Package != "dep" {
		t.Fatalf("failure report: %+v %v", f, err)
	}
}

func TestEntryKey(t *testing.T) {
	// The cache layout is documented byte for byte; this vector pins it.
	got := EntryKey("npx", "pkg", "1.0.0", "sha256:abc")
	// printf 'mcpcage package v1\nnpx\npkg\n1.0.0\nsha256:abc\n' | sha256sum | cut -c1-32
	if got != "023945851bd18a29fa8078585bbc836c" {
		t.Fatalf("key %q", got)
	}
	if EntryKey("npx", "pkg", "1.0.0", "sha256:abc") != got || EntryKey("npx", "pkg", "1.0.1", "sha256:abc") == got ||
		EntryKey("uvx", "pkg", "1.0.0", "sha256:abc") == got || EntryKey("npx", "pkg", "1.0.0", "sha256:abd") == got {
		t.Fatal("key does not depend on every part")
	}
}

func TestImageResolution(t *testing.T) {
	isolate(t)
	cli := dockerClient(t)
	ctx := context.Background()

	ref, id, err := ImageFor(ctx, cli, "npx")
	if err != nil {
		t.Fatalf("node image: %v (run make images)", err)
	}
	if !strings.HasPrefix(id, "sha256:") || (ref != LocalNode && !strings.Contains(ref, "@sha256:")) {
		t.Fatalf("node image %q %q", ref, id)
	}
	if _, _, err := ImageFor(ctx, cli, "uvx"); err != nil {
		t.Fatalf("python image: %v", err)
	}

	t.Setenv(EnvNodeImage, "mcpcage/no-such-image:0")
	_, _, err = ImageFor(ctx, cli, "npx")
	var ie *ImageError
	if !errors.As(err, &ie) {
		t.Fatalf("missing override image: %v", err)
	}
	if want := "image mcpcage/no-such-image:0 (from MCPCAGE_IMAGE_NODE) not found"; !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q lacks %q", err, want)
	}
	_, err = Ensure(ctx, cli, Request{Kind: "npx", Spec: "pkg"})
	if !errors.As(err, &ie) {
		t.Fatalf("Ensure with a missing image: %v", err)
	}
	if ents, _ := os.ReadDir(os.Getenv("MCPCAGE_HOME") + "/packages/npx"); len(ents) != 0 {
		t.Fatal("cache entry without an image")
	}

	// An override that exists is used as it is, and only it.
	t.Setenv(EnvNodeImage, LocalPython)
	ref, _, err = ImageFor(ctx, cli, "npx")
	if err != nil || ref != LocalPython {
		t.Fatalf("override: %q %v", ref, err)
	}

	e := (&ImageError{Tried: []string{OfficialNode, LocalNode}}).Error()
	if e != "image mcpcage/node:22 not found: run `sudo mcpcage images build` (or docker pull node:22-bookworm-slim)" {
		t.Fatalf("message %q", e)
	}
}

func TestRegistrySettings(t *testing.T) {
	dir := isolate(t)
	if err := os.MkdirAll(dir+"/home", 0o700); err != nil {
		t.Fatal(err)
	}
	npmrc := "//mirror.example/npm/:_authToken=SECRET-TOKEN\n; comment\nregistry = https://mirror.example/npm/\ncafile=\"/etc/corp/ca.pem\"\nalways-auth=true\n"
	if err := os.WriteFile(dir+"/home/.npmrc", []byte(npmrc), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := npmRegistry(); got != "https://mirror.example/npm/" {
		t.Fatalf("registry from ~/.npmrc: %q", got)
	}
	if got := npmCAFile(); got != "/etc/corp/ca.pem" {
		t.Fatalf("cafile from ~/.npmrc: %q", got)
	}
	t.Setenv("npm_config_registry", "http://127.0.0.1:4873/")
	if got := npmRegistry(); got != "http://127.0.0.1:4873/" {
		t.Fatalf("registry from the environment: %q", got)
	}
	t.Setenv("npm_config_registry", "not a url")
	if got := npmRegistry(); got != "https://mirror.example/npm/" && got != "" {
		t.Fatalf("invalid registry kept: %q", got)
	}

	for in, want := range map[string]string{
		"https://registry.npmjs.org/":                  "https://registry.npmjs.org/",
		"https://user:tok@mirror.example/simple?k=v#f": "https://***@mirror.example/simple",
		"http://tok@10.0.0.1:8080/simple":              "http://***@10.0.0.1:8080/simple",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}

	t.Setenv("PIP_FIND_LINKS", "/opt/wheels https://mirror.example/links file:///x")
	t.Setenv("PIP_INDEX_URL", "https://mirror.example/simple")
	env := pipEnv()
	if !slices.Contains(env, "PIP_FIND_LINKS=https://mirror.example/links") || !slices.Contains(env, "PIP_INDEX_URL=https://mirror.example/simple") {
		t.Fatalf("find-links: %q", env)
	}

	ca := dir + "/ca.pem"
	os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644)
	t.Setenv("SSL_CERT_FILE", ca)
	t.Setenv("NODE_EXTRA_CA_CERTS", "")
	t.Setenv("PIP_CERT", "")
	t.Setenv("npm_config_cafile", "")
	os.Remove(dir + "/home/.npmrc")
	mounts, cenv, err := caMounts("npx")
	if err != nil || len(mounts) != 1 || !mounts[0].ReadOnly || mounts[0].Source != ca {
		t.Fatalf("CA mounts %+v %v", mounts, err)
	}
	if got := strings.Join(cenv, " "); got != "SSL_CERT_FILE=/etc/mcpcage/ca/SSL_CERT_FILE.pem NODE_EXTRA_CA_CERTS=/etc/mcpcage/ca/SSL_CERT_FILE.pem" {
		t.Fatalf("CA env %q", got)
	}
	t.Setenv("PIP_CERT", dir+"/missing.pem")
	if _, _, err := caMounts("uvx"); err == nil || !strings.Contains(err.Error(), "PIP_CERT") {
		t.Fatalf("missing CA file: %v", err)
	}
}

func TestSameRepo(t *testing.T) {
	for _, c := range []struct {
		digest, ref string
		want        bool
	}{
		{"node@sha256:ab", "node:22-bookworm-slim", true},
		{"docker.io/library/node@sha256:ab", "node:22-bookworm-slim", true},
		{"ghcr.io/astral-sh/uv@sha256:ab", "ghcr.io/astral-sh/uv:python3.12-bookworm-slim", true},
		{"registry.local:5000/node@sha256:ab", "registry.local:5000/node:22", true},
		{"evil/node@sha256:ab", "node:22", false},
		{"ghcr.io/other/uv@sha256:ab", "ghcr.io/astral-sh/uv:python3.12-bookworm-slim", false},
		{"nodejs@sha256:ab", "node:22", false},
	} {
		if got := sameRepo(c.digest, c.ref); got != c.want {
			t.Errorf("sameRepo(%q, %q) = %v", c.digest, c.ref, got)
		}
	}
}
