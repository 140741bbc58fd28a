package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildFixture builds the fixture MCP server as a local program: static
// (CGO_ENABLED=0) or linked against the host's glibc.
func buildFixture(t *testing.T, dir string, static bool) string {
	t.Helper()
	out := filepath.Join(dir, "fixture-static")
	args := []string{"build", "-o", out}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if !static {
		out = filepath.Join(dir, "fixture-glibc")
		args = []string{"build", "-ldflags=-linkmode=external", "-o", out}
		env = append(os.Environ(), "CGO_ENABLED=1")
	}
	cmd := exec.Command("go", append(args, "github.com/mcpcage/mcpcage/internal/fixture/fixtureserver")...)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestFindProgram(t *testing.T) {
	dir := t.TempDir()
	static := buildFixture(t, dir, true)
	glibc := buildFixture(t, dir, false)
	for _, c := range []struct {
		path   string
		static bool
	}{{static, true}, {glibc, false}} {
		p, err := FindProgram(c.path, "", "")
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if p.Path != c.path || p.Static != c.static || !strings.HasPrefix(p.Digest, "sha256:") || len(p.Digest) != 71 {
			t.Errorf("%s: %+v", c.path, p)
		}
	}
	// Through a symlink in PATH, by bare name, and from "~/".
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink(static, filepath.Join(bin, "some-mcp-server")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if p, err := FindProgram("some-mcp-server", "", ""); err != nil || p.Path != static {
		t.Errorf("by name: %+v %v", p, err)
	}
	if p, err := FindProgram("~/bin/some-mcp-server", dir, ""); err != nil || p.Path != static {
		t.Errorf("from ~/: %+v %v", p, err)
	}

	script := filepath.Join(dir, "server.sh")
	os.WriteFile(script, []byte("#!/usr/bin/env python3\nprint()\n"), 0o755)
	notExec := filepath.Join(dir, "data")
	os.WriteFile(notExec, []byte("\x7fELF"), 0o644)
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("MZ not a linux program"), 0o755)
	for _, c := range []struct{ cmd, want string }{
		{"python", "runs a script with your interpreter"},
		{"/usr/bin/python3.11", "runs a script with your interpreter"},
		{"node", "runs a script with your interpreter"},
		{"NODE.EXE", "runs a script with your interpreter"},
		{script, "is a script (#!/usr/bin/env python3)"},
		{notExec, "not an executable file"},
		{garbage, "not a Linux program"},
		{"no-such-server", "not a program on PATH"},
		{"./rel/server", "absolute path"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		if _, err := FindProgram(c.cmd, "", ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cmd, err, c.want)
		}
	}
}
