package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/guard"
)

// buildProgram builds the fixture MCP server as a local program, static or
// linked against glibc, as `go install` leaves a server.
func buildProgram(t *testing.T, out string, static bool) string {
	t.Helper()
	args := []string{"build", "-o", out}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if !static {
		args = append(args, "-ldflags=-linkmode=external")
		env = append(os.Environ(), "CGO_ENABLED=1")
	}
	cmd := exec.Command("go", append(args, "github.com/mcpcage/mcpcage/internal/fixture/fixtureserver")...)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// TestProtectFixCommandForms: `npx -p PKG CMD`, `npx --yes` and local
// programs (static and glibc-linked) are caged by --fix and start through a
// client; a script interpreter command stays as it is, with the reason.
func TestProtectFixCommandForms(t *testing.T) {
	dir := stateDir(t)
	homeDir := filepath.Join(dir, "home")
	t.Setenv("MCPCAGE_HOME", filepath.Join(dir, "mcpcage"))
	bin := filepath.Join(dir, "bin")
	static := buildProgram(t, filepath.Join(bin, "fixture-static"), true)
	glibc := buildProgram(t, filepath.Join(bin, "fixture-glibc"), false)
	tools := filepath.Join(dir, "tools.json")
	writeFile(t, tools, `[{"name":"lookup","description":"Looks a word up.","inputSchema":{"type":"object"}}]`)

	cfg := filepath.Join(homeDir, ".cursor", "mcp.json")
	orig := `{
  "mcpServers": {
    "by-package": {"command": "npx", "args": ["--yes", "-p", "` + everything + `", "mcp-server-everything"]},
    "static": {"command": "` + static + `", "args": ["stdio"], "env": {"FIXTURE_TOOLS": "` + tools + `"}},
    "glibc": {"command": "` + glibc + `", "args": ["stdio"], "env": {"FIXTURE_TOOLS": "` + tools + `"}},
    "script": {"command": "python", "args": ["server.py"]}
  }
}
`
	writeFile(t, cfg, orig)
	exe, err := exec.LookPath("mcpcage")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	opts := &ProtectOptions{
		IO:     &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Layout: clients.Layout{OS: "linux", Home: homeDir, Getenv: func(string) string { return "" }},
		Fix:    true, Yes: true, Exe: exe, Now: time.Now,
	}
	if err := protectRun(opts); err != nil {
		t.Fatalf("protect --fix: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		`script (local command): "python" runs a script with your interpreter`,
		"Caged 3 servers in 1 file. Installed 1 package in ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("protect --fix does not say %q:\n%s", want, out.String())
		}
	}
	data, _ := os.ReadFile(cfg)
	c := clients.Lookup("cursor")
	srvs, _ := clients.Read(c.Format, data, c.Tables)
	byName := map[string]clients.Server{}
	for _, s := range srvs {
		byName[s.Name] = s
	}
	if byName["script"].Caged() {
		t.Fatal("the script entry was caged")
	}
	for _, name := range []string{"by-package", "static", "glibc"} {
		s := byName[name]
		if !s.Caged() {
			t.Fatalf("%s not caged: %s %q", name, s.Command, s.Args)
		}
		t.Run(name, func(t *testing.T) {
			cs, stderr := startEntry(t, s, homeDir, dir)
			defer cs.Close()
			names := toolNames(t, cs, stderr)
			want := "lookup"
			if name == "by-package" {
				want = "echo"
			}
			if !contains(names, want) {
				t.Fatalf("tools %v lack %s\nstderr:\n%s", names, want, stderr.String())
			}
		})
	}
	// The program ran where it is, read-only, and its digest is pinned.
	b, _ := os.ReadFile(glibc)
	sum := sha256.Sum256(b)
	f, err := guard.PinStore(filepath.Join(dir, "mcpcage")).Load("glibc")
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Approved.Launch; l.Kind != "exec" || l.Package != glibc || l.Version != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("launch pinned %+v", l)
	}

	uo := &UnwrapOptions{ProtectOptions{IO: opts.IO, Layout: opts.Layout, Yes: true, Now: time.Now}}
	if err := unwrapRun(uo); err != nil {
		t.Fatalf("unwrap: %v\n%s", err, errOut.String())
	}
	if got, _ := os.ReadFile(cfg); string(got) != orig {
		t.Errorf("unwrap did not restore the file:\n%s", got)
	}
}
