package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Format is the syntax of a configuration file.
type Format int

const (
	// JSON is strict JSON: the client breaks on comments or a trailing comma.
	JSON Format = iota
	// JSONC is JSON with comments and trailing commas.
	JSONC
	// TOML is Codex's config.toml.
	TOML
)

func (f Format) String() string {
	switch f {
	case JSON:
		return "JSON"
	case JSONC:
		return "JSONC"
	case TOML:
		return "TOML"
	}
	return "unknown"
}

// Layout says where a user's files are: the operating system's conventions
// and the user's directories and environment. Tests build one per OS with a
// fake home.
type Layout struct {
	OS     string              // "darwin", "windows" or "linux" (any other is treated as linux)
	Home   string              // the user's home directory
	Getenv func(string) string // APPDATA, LOCALAPPDATA, XDG_CONFIG_HOME, CLAUDE_CONFIG_DIR, ...
}

// HostLayout is the layout of the machine mcpcage runs on.
func HostLayout() (Layout, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return Layout{}, err
	}
	return Layout{OS: runtime.GOOS, Home: h, Getenv: os.Getenv}, nil
}

func (l Layout) env(k string) string {
	if l.Getenv == nil {
		return ""
	}
	return l.Getenv(k)
}

func (l Layout) appData() string {
	if v := l.env("APPDATA"); v != "" {
		return v
	}
	return filepath.Join(l.Home, "AppData", "Roaming")
}

func (l Layout) localAppData() string {
	if v := l.env("LOCALAPPDATA"); v != "" {
		return v
	}
	return filepath.Join(l.Home, "AppData", "Local")
}

func (l Layout) xdgConfig() string {
	if v := l.env("XDG_CONFIG_HOME"); v != "" && filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(l.Home, ".config")
}

// appConfig is where desktop apps keep their settings: Application Support
// on macOS, %APPDATA% on Windows, $XDG_CONFIG_HOME elsewhere.
func (l Layout) appConfig() string {
	switch l.OS {
	case "darwin":
		return filepath.Join(l.Home, "Library", "Application Support")
	case "windows":
		return l.appData()
	}
	return l.xdgConfig()
}

// Client is one MCP client: where its files are and where servers sit in them.
type Client struct {
	ID     string // used with --client
	Name   string // shown to people
	Format Format
	// User lists the user-level files for a layout; entries may be globs.
	User func(l Layout) []string
	// Project lists files relative to a project directory.
	Project []string
	// Tables are the key paths of the objects whose members are servers;
	// "*" matches every key at that level.
	Tables [][]string
}

var vscodeFlavours = []string{"Code", "Code - Insiders"}

// Clients is the table of supported clients, in the order they are shown.
var Clients = []*Client{
	{
		ID: "claude-desktop", Name: "Claude Desktop", Format: JSON,
		User: func(l Layout) []string {
			ps := []string{filepath.Join(l.appConfig(), "Claude", "claude_desktop_config.json")}
			if l.OS == "windows" {
				// The Microsoft Store (MSIX) build keeps its own virtualised copy.
				ps = append(ps, filepath.Join(l.localAppData(), "Packages", "Claude_*", "LocalCache", "Roaming", "Claude", "claude_desktop_config.json"))
			}
			return ps
		},
		Tables: [][]string{{"mcpServers"}},
	},
	{
		ID: "claude-code", Name: "Claude Code", Format: JSON,
		User: func(l Layout) []string {
			if d := l.env("CLAUDE_CONFIG_DIR"); d != "" {
				return []string{filepath.Join(d, ".claude.json")}
			}
			return []string{filepath.Join(l.Home, ".claude.json")}
		},
		Project: []string{".mcp.json"},
		Tables:  [][]string{{"mcpServers"}, {"projects", "*", "mcpServers"}},
	},
	{
		ID: "cursor", Name: "Cursor", Format: JSONC,
		User:    func(l Layout) []string { return []string{filepath.Join(l.Home, ".cursor", "mcp.json")} },
		Project: []string{filepath.Join(".cursor", "mcp.json")},
		Tables:  [][]string{{"mcpServers"}},
	},
	{
		ID: "vscode", Name: "VS Code", Format: JSONC,
		User: func(l Layout) []string {
			var ps []string
			for _, f := range vscodeFlavours {
				ps = append(ps, filepath.Join(l.appConfig(), f, "User", "mcp.json"))
			}
			return ps
		},
		Project: []string{filepath.Join(".vscode", "mcp.json")},
		Tables:  [][]string{{"servers"}},
	},
	{
		ID: "windsurf", Name: "Windsurf", Format: JSONC,
		User: func(l Layout) []string {
			return []string{filepath.Join(l.Home, ".codeium", "windsurf", "mcp_config.json")}
		},
		Tables: [][]string{{"mcpServers"}},
	},
	{
		ID: "devin", Name: "Devin", Format: JSONC,
		User: func(l Layout) []string {
			if l.OS == "windows" {
				return []string{filepath.Join(l.appData(), "devin", "config.json")}
			}
			return []string{filepath.Join(l.xdgConfig(), "devin", "config.json")}
		},
		Project: []string{filepath.Join(".devin", "config.json"), filepath.Join(".devin", "config.local.json")},
		Tables:  [][]string{{"mcpServers"}},
	},
	{
		ID: "copilot-cli", Name: "GitHub Copilot CLI", Format: JSON,
		User: func(l Layout) []string {
			if d := l.env("COPILOT_HOME"); d != "" {
				return []string{filepath.Join(d, "mcp-config.json")}
			}
			return []string{filepath.Join(l.Home, ".copilot", "mcp-config.json")}
		},
		Tables: [][]string{{"mcpServers"}},
	},
	{
		ID: "zed", Name: "Zed", Format: JSONC,
		User: func(l Layout) []string {
			if l.OS == "windows" {
				return []string{filepath.Join(l.appData(), "Zed", "settings.json")}
			}
			return []string{filepath.Join(l.xdgConfig(), "zed", "settings.json")}
		},
		Project: []string{filepath.Join(".zed", "settings.json")},
		Tables:  [][]string{{"context_servers"}},
	},
	{
		ID: "cline", Name: "Cline", Format: JSON,
		User: func(l Layout) []string {
			var ps []string
			for _, f := range vscodeFlavours {
				ps = append(ps, filepath.Join(l.appConfig(), f, "User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json"))
			}
			return ps
		},
		Tables: [][]string{{"mcpServers"}},
	},
	{
		ID: "gemini-cli", Name: "Gemini CLI", Format: JSONC,
		User:    func(l Layout) []string { return []string{filepath.Join(l.Home, ".gemini", "settings.json")} },
		Project: []string{filepath.Join(".gemini", "settings.json")},
		Tables:  [][]string{{"mcpServers"}},
	},
	{
		ID: "codex", Name: "Codex CLI", Format: TOML,
		User: func(l Layout) []string {
			if d := l.env("CODEX_HOME"); d != "" {
				return []string{filepath.Join(d, "config.toml")}
			}
			return []string{filepath.Join(l.Home, ".codex", "config.toml")}
		},
		Project: []string{filepath.Join(".codex", "config.toml")},
		Tables:  [][]string{{"mcp_servers"}},
	},
}

// Lookup returns the client with the given ID (case-insensitive), or nil.
func Lookup(id string) *Client {
	for _, c := range Clients {
		if strings.EqualFold(c.ID, id) {
			return c
		}
	}
	return nil
}

// IDs lists the client IDs, for help texts and errors.
func IDs() []string {
	var ids []string
	for _, c := range Clients {
		ids = append(ids, c.ID)
	}
	return ids
}

// outOfProject says why a project file is not read when it, or a folder on
// its way, is a link that leads out of the project; "" when it stays in.
func outOfProject(projectDir, path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "" // a dangling link: Stat finds nothing to read
	}
	root, err := filepath.EvalSymlinks(projectDir)
	if err != nil {
		root = projectDir
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Sprintf("a link out of the project (to %s); not read", real)
	}
	return ""
}

// File is one configuration file that exists.
type File struct {
	Client *Client
	Path   string // absolute
	Scope  string // "user" or "project"
	// Refused, when not "", is why the file is not read: a project file
	// that is a link out of its project (a cloned repository's
	// .mcp.json pointing at /proc/kmsg or at a file of yours).
	Refused string
}

// Locate returns the configuration files that exist for the layout and, when
// projectDir is not empty, in that project, for the given clients (all when
// nil). A path reached twice (a project that is also the home) is listed once.
func Locate(l Layout, projectDir string, only []*Client) []File {
	cs := only
	if cs == nil {
		cs = Clients
	}
	var out []File
	seen := map[string]bool{}
	add := func(c *Client, p, scope string) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		key := abs
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			key = r
		}
		if seen[key] {
			return
		}
		if _, err := os.Lstat(abs); err != nil {
			return
		}
		if scope == "project" {
			if why := outOfProject(projectDir, abs); why != "" {
				out = append(out, File{Client: c, Path: abs, Scope: scope, Refused: why})
				return
			}
		}
		if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
			return
		}
		seen[key] = true
		out = append(out, File{Client: c, Path: abs, Scope: scope})
	}
	for _, c := range cs {
		for _, p := range c.User(l) {
			if strings.Contains(p, "*") {
				ms, _ := filepath.Glob(p)
				sort.Strings(ms)
				for _, m := range ms {
					add(c, m, "user")
				}
				continue
			}
			add(c, p, "user")
		}
		if projectDir != "" {
			for _, p := range c.Project {
				add(c, filepath.Join(projectDir, p), "project")
			}
		}
	}
	return out
}
