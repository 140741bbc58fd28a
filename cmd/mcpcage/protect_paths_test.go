package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpcage/mcpcage/internal/clients"
)

// startEntry starts a config entry as an SDK client does: its command line,
// its env block and only HOME, PATH and USER, in dir, within Claude Code's
// connect timeout.
func startEntry(t *testing.T, s clients.Server, homeDir, dir string) (*mcp.ClientSession, *cageBuffer) {
	t.Helper()
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER")}
	for _, v := range s.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	stderr := &cageBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcage-paths-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start %s: %v\nstderr:\n%s", s.Name, err, stderr.String())
	}
	return cs, stderr
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readServers(t *testing.T, client, path string) map[string]clients.Server {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := clients.Lookup(client)
	srvs, err := clients.Read(c.Format, data, c.Tables)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]clients.Server{}
	for _, s := range srvs {
		if !s.Caged() {
			t.Fatalf("%s in %s is not caged: %s %q", s.Name, path, s.Command, s.Args)
		}
		out[s.Name] = s
	}
	return out
}

// TestProtectFixPathsAndState: after --fix, "~/x" and "." arguments reach the
// folders they mean, a project's server starts in its project folder and sees
// it, and server-memory keeps its store across sessions; unwrap then gives
// both files back byte for byte.
func TestProtectFixPathsAndState(t *testing.T) {
	dir := stateDir(t)
	homeDir := filepath.Join(dir, "home")
	t.Setenv("MCPCAGE_HOME", filepath.Join(dir, "mcpcage"))
	writeFile(t, filepath.Join(homeDir, "notes", "a.txt"), "a note in the home directory")
	proj := filepath.Join(dir, "src", "app")
	writeFile(t, filepath.Join(proj, "b.txt"), "a file of the project")

	user := filepath.Join(homeDir, ".cursor", "mcp.json")
	userOrig := `{
  "mcpServers": {
    "notes": {"command": "npx", "args": ["-y", "` + filesystem + `", "~/notes"]},
    "memory": {"command": "npx", "args": ["-y", "` + memory + `"]}
  }
}
`
	writeFile(t, user, userOrig)
	project := filepath.Join(proj, ".mcp.json")
	projOrig := `{"mcpServers": {"files": {"command": "npx", "args": ["-y", "` + filesystem + `", "."]}}}` + "\n"
	writeFile(t, project, projOrig)

	exe, err := exec.LookPath("mcpcage")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	opts := &ProtectOptions{
		IO:         &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Layout:     clients.Layout{OS: "linux", Home: homeDir, Getenv: func(string) string { return "" }},
		ProjectDir: proj,
		Fix:        true, Yes: true, Exe: exe, Now: time.Now,
	}
	if err := protectRun(opts); err != nil {
		t.Fatalf("protect --fix: %v\n%s%s", err, out.String(), errOut.String())
	}
	plan := out.String()
	for _, want := range []string{
		`argument 3 "~/notes" is ` + filepath.Join(homeDir, "notes") + `, shown read-only at that path`,
		`argument 3 "." is ` + proj + `, shown read-only at that path`,
		"project folder " + proj + " shown read-only; the server starts in it",
		"MEMORY_FILE_PATH (its knowledge graph) is set to ",
		"Caged 3 servers in 2 files. Installed 2 packages in ",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not say %q:\n%s", want, plan)
		}
	}

	us := readServers(t, "cursor", user)
	ps := readServers(t, "claude-code", project)

	t.Run("home", func(t *testing.T) {
		cs, stderr := startEntry(t, us["notes"], homeDir, dir)
		defer cs.Close()
		got, isErr := call(t, cs, "read_text_file", map[string]any{"path": filepath.Join(homeDir, "notes", "a.txt")})
		if isErr || !strings.Contains(got, "a note in the home directory") {
			t.Errorf("read ~/notes/a.txt: %q (error %v)\nstderr:\n%s", got, isErr, stderr.String())
		}
	})
	t.Run("project", func(t *testing.T) {
		// Clients start a project's servers in the project.
		cs, stderr := startEntry(t, ps["files"], homeDir, proj)
		defer cs.Close()
		// A relative path is read against the server's working directory.
		got, isErr := call(t, cs, "read_text_file", map[string]any{"path": "b.txt"})
		if isErr || !strings.Contains(got, "a file of the project") {
			t.Errorf("read b.txt relative to the working directory: %q (error %v)\nstderr:\n%s", got, isErr, stderr.String())
		}
		if got, isErr := call(t, cs, "write_file", map[string]any{"path": filepath.Join(proj, "new.txt"), "content": "x"}); !isErr {
			t.Errorf("writing the project folder succeeded: %s", got)
		}
	})
	t.Run("memory", func(t *testing.T) {
		cs, stderr := startEntry(t, us["memory"], homeDir, dir)
		got, isErr := call(t, cs, "create_entities", map[string]any{"entities": []map[string]any{
			{"name": "mcpcage-kept", "entityType": "test", "observations": []string{"written in session one"}},
		}})
		cs.Close()
		if isErr {
			t.Fatalf("create_entities: %s\nstderr:\n%s", got, stderr.String())
		}
		cs2, stderr2 := startEntry(t, us["memory"], homeDir, dir)
		defer cs2.Close()
		got, isErr = call(t, cs2, "read_graph", map[string]any{})
		if isErr || !strings.Contains(got, "written in session one") {
			t.Errorf("the second session does not have the first one's entity: %q\nstderr:\n%s", got, stderr2.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "mcpcage", "servers", "memory", "home", "memory.jsonl")); err != nil {
			t.Errorf("the store is not in the private HOME: %v", err)
		}
	})

	uo := &UnwrapOptions{ProtectOptions{IO: opts.IO, Layout: opts.Layout, ProjectDir: proj, Yes: true, Now: time.Now}}
	if err := unwrapRun(uo); err != nil {
		t.Fatalf("unwrap: %v\n%s", err, errOut.String())
	}
	for p, want := range map[string]string{user: userOrig, project: projOrig} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("unwrap did not restore %s:\n%s", p, got)
		}
	}
}
