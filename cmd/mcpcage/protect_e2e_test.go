package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/pin"
)

func toolName(v jsontext.Value) string {
	var t struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(v, &t)
	return t.Name
}

// TestProtectFixStartsCaged: entries caged by `protect --fix` start as a
// client starts them (the command and args from the file, the env block as
// the environment) and list their tools, in the real cage.
func TestProtectFixStartsCaged(t *testing.T) {
	dir := stateDir(t)
	homeDir := filepath.Join(dir, "home")
	t.Setenv("MCPCAGE_HOME", filepath.Join(dir, "mcpcage"))

	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "readme.txt"), []byte("seen through the cage"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(homeDir, ".config", "Claude", "claude_desktop_config.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := []byte(`{
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["-y", "` + everything + `"],
      "env": {"E2E_GREETING": "hello from the env block"}
    },
    "docs": {
      "command": "npx",
      "args": ["-y", "` + filesystem + `", "` + docs + `"]
    }
  }
}
`)
	if err := os.WriteFile(cfg, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	// The path a client would start: the mcpcage on PATH (the test's own
	// program under that name; os.Executable would name the test binary).
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
	if !strings.Contains(out.String(), "Caged 2 servers in 1 file. Installed 2 packages in ") {
		t.Fatalf("protect --fix said:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "mcpcage: installing "+everything+" for everything (1 of 2)...") {
		t.Errorf("protect --fix showed no progress of the install:\n%s", errOut.String())
	}

	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := clients.Lookup("claude-desktop")
	srvs, err := clients.Read(c.Format, data, c.Tables)
	if err != nil {
		t.Fatal(err)
	}
	inspect := func(wantPin string) {
		t.Helper()
		var jout bytes.Buffer
		io := &IOStreams{In: strings.NewReader(""), Out: &jout, ErrOut: &errOut}
		if err := protectRun(&ProtectOptions{IO: io, Layout: opts.Layout, JSON: true, Inspect: true}); err != nil {
			t.Fatalf("protect --inspect: %v\n%s", err, errOut.String())
		}
		var rep reportJSON
		if err := json.Unmarshal(jout.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		for _, sj := range rep.Files[0].Servers {
			in := sj.Inspect
			if in == nil || in.Error != "" || in.Pin != wantPin {
				t.Fatalf("inspect %s: %+v, want pin %q", sj.Name, in, wantPin)
			}
			if sj.Name == "everything" && !contains(in.Tools, "echo") {
				t.Errorf("inspect everything: tools %v lack echo", in.Tools)
			}
		}
	}
	// Before any session: listed, nothing pinned, nothing written.
	inspect("new")

	for _, s := range srvs {
		if !s.Caged() || s.Command != exe {
			t.Fatalf("%s not caged: %s %q", s.Name, s.Command, s.Args)
		}
		t.Run(s.Name, func(t *testing.T) {
			// As an SDK client does it: the file's command line, its env
			// block, and only the few variables the TypeScript SDK passes
			// by default (no MCPCAGE_HOME: --fix wrote --home).
			cmd := exec.Command(s.Command, s.Args...)
			cmd.Env = []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER")}
			for _, v := range s.Env {
				cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
			}
			stderr := &cageBuffer{}
			cmd.Stderr = stderr
			// Claude Code's connect timeout: the first start must not spend
			// it installing (--fix did that).
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpcage-protect-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("start %s %q: %v\nstderr:\n%s", s.Command, s.Args, err, stderr.String())
			}
			defer cs.Close()
			if strings.Contains(stderr.String(), "mcpcage: installing") {
				t.Errorf("the first start installed its package:\n%s", stderr.String())
			}
			names := toolNames(t, cs, stderr)
			switch s.Name {
			case "everything":
				if !contains(names, "echo") {
					t.Fatalf("tools %v lack echo", names)
				}
			case "docs":
				// The folder argument is mounted read-only without any flag.
				got, isErr := call(t, cs, "read_text_file", map[string]any{"path": filepath.Join(docs, "readme.txt")})
				if isErr || !strings.Contains(got, "seen through the cage") {
					t.Errorf("read_text_file: %q (error %v)\nstderr:\n%s", got, isErr, stderr.String())
				}
				got, isErr = call(t, cs, "write_file", map[string]any{"path": filepath.Join(docs, "new.txt"), "content": "x"})
				if !isErr {
					t.Errorf("writing the folder succeeded: %s", got)
				}
			}
		})
	}

	// The sessions pinned the tools; inspection now finds them unchanged.
	inspect("matches")

	// What was approved no longer matches what the server offers (as after
	// an update): inspection says a session would lock, and changes nothing.
	st := guard.PinStore(filepath.Join(dir, "mcpcage"))
	for _, name := range []string{"everything", "docs"} {
		if _, err := st.Update(name, func(f *pin.File) (bool, error) {
			f.Approved.Tools = append(f.Approved.Tools, jsontext.Value(`{"name":"tool-from-before","description":"gone now","inputSchema":{"type":"object"}}`))
			f.Approved.Tools[0] = jsontext.Value(`{"name":` + strconv.Quote(toolName(f.Approved.Tools[0])) + `,"description":"approved long ago","inputSchema":{"type":"object"}}`)
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	inspect("changed")

	// And unwrap gives the file back as it was.
	out.Reset()
	uo := &UnwrapOptions{ProtectOptions{IO: opts.IO, Layout: opts.Layout, Yes: true, Now: time.Now}}
	if err := unwrapRun(uo); err != nil {
		t.Fatalf("unwrap: %v\n%s", err, errOut.String())
	}
	if got, _ := os.ReadFile(cfg); !bytes.Equal(got, orig) {
		t.Errorf("unwrap did not restore the file:\n%s", got)
	}
}
