package clients

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// fixtureFor names the testdata file that stands for each client's file.
var fixtureFor = map[string]string{
	"claude-desktop": "claude_desktop_config.json",
	"claude-code":    "claude.json",
	"cursor":         "cursor_mcp.json",
	"vscode":         "vscode_mcp.json",
	"windsurf":       "windsurf_mcp_config.json",
	"devin":          "devin_config.json",
	"copilot-cli":    "copilot_mcp-config.json",
	"zed":            "zed_settings.json",
	"cline":          "cline_mcp_settings.json",
	"gemini-cli":     "gemini_settings.json",
	"codex":          "codex_config.toml",
}

func place(t *testing.T, root, rel, client string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, readFixture(t, fixtureFor[client]), 0o600); err != nil {
		t.Fatal(err)
	}
}

type want struct{ client, rel, scope string }

// checkLayout puts a fixture at every path of the layout, locates them, and
// cages and unwraps each one on disk.
func checkLayout(t *testing.T, l Layout, root, project string, wants []want) {
	t.Helper()
	for _, w := range wants {
		place(t, root, w.rel, w.client)
	}
	got := Locate(l, project, nil)
	var gotS, wantS []string
	for _, f := range got {
		rel, _ := filepath.Rel(root, f.Path)
		gotS = append(gotS, f.Client.ID+" "+f.Scope+" "+filepath.ToSlash(rel))
	}
	for _, w := range wants {
		wantS = append(wantS, w.client+" "+w.scope+" "+filepath.ToSlash(w.rel))
	}
	sort.Strings(gotS)
	sort.Strings(wantS)
	if !reflect.DeepEqual(gotS, wantS) {
		t.Fatalf("located\n %q\nwant\n %q", gotS, wantS)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range got {
		orig, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		fixed, changes, err := Edit(f.Client.Format, orig, f.Client.Tables, OpFix, exe, nil)
		if err != nil || len(changes) == 0 {
			t.Fatalf("%s: fix: %v, %d changes", f.Path, err, len(changes))
		}
		if _, err := Write(f.Path, orig, fixed, now, nil); err != nil {
			t.Fatalf("%s: write: %v", f.Path, err)
		}
		onDisk, _ := os.ReadFile(f.Path)
		originals := map[string]string{}
		for _, ch := range changes {
			originals[key(ch.Before.Where)] = ch.Original
		}
		back, _, err := EditWith(f.Client.Format, onDisk, f.Client.Tables, OpUnwrap, Wrap{Original: func(s Server) string { return originals[key(s.Where)] }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Write(f.Path, onDisk, back, now, nil); err != nil {
			t.Fatalf("%s: write: %v", f.Path, err)
		}
		final, _ := os.ReadFile(f.Path)
		if !bytes.Equal(final, orig) {
			t.Errorf("%s: not restored byte for byte", f.Path)
		}
		fi, _ := os.Stat(f.Path)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f.Path, fi.Mode().Perm())
		}
		// Two writes in the same second: two backups, none overwritten.
		bs, _ := filepath.Glob(f.Path + BackupSuffix + "*")
		if len(bs) != 2 {
			t.Errorf("%s: %d backups, want 2: %q", f.Path, len(bs), bs)
		}
	}
}

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

var projectFiles = []want{
	{"claude-code", "proj/.mcp.json", "project"},
	{"cursor", "proj/.cursor/mcp.json", "project"},
	{"vscode", "proj/.vscode/mcp.json", "project"},
	{"devin", "proj/.devin/config.json", "project"},
	{"devin", "proj/.devin/config.local.json", "project"},
	{"zed", "proj/.zed/settings.json", "project"},
	{"gemini-cli", "proj/.gemini/settings.json", "project"},
	{"codex", "proj/.codex/config.toml", "project"},
}

func TestLayoutMacOS(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	as := "home/Library/Application Support/"
	l := Layout{OS: "darwin", Home: home, Getenv: envMap(nil)}
	checkLayout(t, l, root, filepath.Join(root, "proj"), append([]want{
		{"claude-desktop", as + "Claude/claude_desktop_config.json", "user"},
		{"claude-code", "home/.claude.json", "user"},
		{"cursor", "home/.cursor/mcp.json", "user"},
		{"vscode", as + "Code/User/mcp.json", "user"},
		{"vscode", as + "Code - Insiders/User/mcp.json", "user"},
		{"windsurf", "home/.codeium/windsurf/mcp_config.json", "user"},
		{"devin", "home/.config/devin/config.json", "user"},
		{"copilot-cli", "home/.copilot/mcp-config.json", "user"},
		{"zed", "home/.config/zed/settings.json", "user"},
		{"cline", as + "Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", "user"},
		{"gemini-cli", "home/.gemini/settings.json", "user"},
		{"codex", "home/.codex/config.toml", "user"},
	}, projectFiles...))
}

func TestLayoutWindows(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "Users", "Ana")
	env := map[string]string{
		"APPDATA":      filepath.Join(root, "Users", "Ana", "AppData", "Roaming"),
		"LOCALAPPDATA": filepath.Join(root, "Users", "Ana", "AppData", "Local"),
	}
	l := Layout{OS: "windows", Home: home, Getenv: envMap(env)}
	ad := "Users/Ana/AppData/Roaming/"
	checkLayout(t, l, root, filepath.Join(root, "proj"), append([]want{
		{"claude-desktop", ad + "Claude/claude_desktop_config.json", "user"},
		{"claude-desktop", "Users/Ana/AppData/Local/Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude/claude_desktop_config.json", "user"},
		{"claude-code", "Users/Ana/.claude.json", "user"},
		{"cursor", "Users/Ana/.cursor/mcp.json", "user"},
		{"vscode", ad + "Code/User/mcp.json", "user"},
		{"windsurf", "Users/Ana/.codeium/windsurf/mcp_config.json", "user"},
		{"devin", ad + "devin/config.json", "user"},
		{"copilot-cli", "Users/Ana/.copilot/mcp-config.json", "user"},
		{"zed", ad + "Zed/settings.json", "user"},
		{"cline", ad + "Code - Insiders/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", "user"},
		{"gemini-cli", "Users/Ana/.gemini/settings.json", "user"},
		{"codex", "Users/Ana/.codex/config.toml", "user"},
	}, projectFiles...))
}

func TestLayoutLinux(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	l := Layout{OS: "linux", Home: home, Getenv: envMap(nil)}
	checkLayout(t, l, root, filepath.Join(root, "proj"), append([]want{
		{"claude-desktop", "home/.config/Claude/claude_desktop_config.json", "user"},
		{"claude-code", "home/.claude.json", "user"},
		{"cursor", "home/.cursor/mcp.json", "user"},
		{"vscode", "home/.config/Code/User/mcp.json", "user"},
		{"windsurf", "home/.codeium/windsurf/mcp_config.json", "user"},
		{"devin", "home/.config/devin/config.json", "user"},
		{"copilot-cli", "home/.copilot/mcp-config.json", "user"},
		{"zed", "home/.config/zed/settings.json", "user"},
		{"cline", "home/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", "user"},
		{"gemini-cli", "home/.gemini/settings.json", "user"},
		{"codex", "home/.codex/config.toml", "user"},
	}, projectFiles...))
}

// The variables that move a client's files are honoured.
func TestLayoutLinuxEnvOverrides(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	env := map[string]string{
		"XDG_CONFIG_HOME":   filepath.Join(root, "xdg"),
		"CLAUDE_CONFIG_DIR": filepath.Join(root, "claude-dir"),
		"COPILOT_HOME":      filepath.Join(root, "copilot"),
		"CODEX_HOME":        filepath.Join(root, "codex"),
	}
	l := Layout{OS: "linux", Home: home, Getenv: envMap(env)}
	// Files at the default places must not be found any more.
	place(t, root, "home/.claude.json", "claude-code")
	place(t, root, "home/.codex/config.toml", "codex")
	place(t, root, "home/.config/Claude/claude_desktop_config.json", "claude-desktop")
	checkLayout(t, l, root, "", []want{
		{"claude-desktop", "xdg/Claude/claude_desktop_config.json", "user"},
		{"claude-code", "claude-dir/.claude.json", "user"},
		{"vscode", "xdg/Code/User/mcp.json", "user"},
		{"copilot-cli", "copilot/mcp-config.json", "user"},
		{"zed", "xdg/zed/settings.json", "user"},
		{"codex", "codex/config.toml", "user"},
	})
}

func TestWriteRefusesConcurrentChange(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.json")
	orig := readFixture(t, "cursor_mcp.json")
	if err := os.WriteFile(p, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	c := Lookup("cursor")
	fixed, _, err := Edit(c.Format, orig, c.Tables, OpFix, exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := append(append([]byte(nil), orig...), ' ')
	_, err = Write(p, orig, fixed, time.Now(), func() {
		if err := os.WriteFile(p, theirs, 0o640); err != nil {
			t.Fatal(err)
		}
	})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("got %v, want ErrChanged", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, theirs) {
		t.Error("the other program's change was lost")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left files behind: %v", ents)
	}
	// Changed before the plan was even used.
	if _, err := Write(p, orig, fixed, time.Now(), nil); !errors.Is(err, ErrChanged) {
		t.Fatalf("got %v, want ErrChanged", err)
	}
}

// A config kept as a symbolic link (dotfile managers) stays a link; the
// file it points to is changed.
func TestWriteFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "claude.json")
	os.MkdirAll(filepath.Dir(real), 0o755)
	orig := readFixture(t, "claude.json")
	os.WriteFile(real, orig, 0o600)
	link := filepath.Join(dir, ".claude.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c := Lookup("claude-code")
	fixed, _, err := Edit(c.Format, orig, c.Tables, OpFix, exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(link, orig, fixed, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, fixed) {
		t.Error("the real file was not changed")
	}
}

func TestLedger(t *testing.T) {
	p := filepath.Join(t.TempDir(), "protect", "caged.json")
	l, err := OpenLedger(p)
	if err != nil {
		t.Fatal(err)
	}
	l.Set("/x/a.json", []string{"mcpServers", "b"}, true)
	l.Set("/x/a.json", []string{"mcpServers", "a"}, true)
	l.Set("/x/a.json", []string{"mcpServers", "b"}, false)
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "{\n  \"caged\": [\n    {\n      \"file\": \"/x/a.json\",\n      \"where\": [\n        \"mcpServers\",\n        \"a\"\n      ]\n    }\n  ]\n}\n"; string(b) != want {
		t.Errorf("ledger file:\n%s", b)
	}
	l2, _ := OpenLedger(p)
	if !l2.Has("/x/a.json", []string{"mcpServers", "a"}) || l2.Has("/x/a.json", []string{"mcpServers", "b"}) {
		t.Error("ledger lost its entries")
	}
	if strings.Contains(string(b), "\x00") {
		t.Error("key separator leaked into the file")
	}
}
