package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/clients"
)

// fixtureSecrets are pieces of the clear-text secrets written in
// internal/clients/testdata; none may ever be printed.
var fixtureSecrets = []string{
	"f4k3T0k3n", "FAKEfake", "Sh0pP4ss", "q8Zr2LmW", "BSAq9x7", "2f9a81b3", "hf_FAKE", "wJalrXUtn",
	"Zx8q2LmW", "3f9a81b36c", "tvly-FAKE", "dQ8zr2L", "sntrys_eyJ", "IOSFODNN7", "github_pat_FAKE11",
}

// TestProtectNeverPrintsSecrets runs the report, the JSON report and the
// --fix plan over every fixture, placed where each client keeps it.
func TestProtectNeverPrintsSecrets(t *testing.T) {
	t.Setenv("MCPCAGE_HOME", filepath.Join(t.TempDir(), "mcpcage"))
	home := t.TempDir()
	place := map[string]string{
		".config/Claude/claude_desktop_config.json": "claude_desktop_config.json",
		".claude.json":                      "claude.json",
		".cursor/mcp.json":                  "cursor_mcp.json",
		".config/Code/User/mcp.json":        "vscode_mcp.json",
		".codeium/windsurf/mcp_config.json": "windsurf_mcp_config.json",
		".config/devin/config.json":         "devin_config.json",
		".copilot/mcp-config.json":          "copilot_mcp-config.json",
		".config/zed/settings.json":         "zed_settings.json",
		".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json": "cline_mcp_settings.json",
		".gemini/settings.json": "gemini_settings.json",
		".codex/config.toml":    "codex_config.toml",
	}
	for rel, fx := range place {
		b, err := os.ReadFile(filepath.Join("..", "..", "internal", "clients", "testdata", fx))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	layout := clients.Layout{OS: "linux", Home: home, Getenv: func(string) string { return "" }}
	for _, o := range []ProtectOptions{{}, {JSON: true}, {Fix: true}} {
		var out, errOut bytes.Buffer
		o.IO = &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		o.Layout, o.Exe, o.Now = layout, "/usr/local/bin/mcpcage", time.Now
		err := protectRun(&o)
		if o.Fix {
			if err == nil || !strings.Contains(out.String(), "cage github") {
				t.Fatalf("--fix without a terminal: %v\n%s", err, out.String())
			}
		} else if err != nil {
			t.Fatal(err)
		}
		all := out.String() + errOut.String()
		if !strings.Contains(all, "…") {
			t.Fatalf("no redacted secret in the output at all:\n%s", all)
		}
		for _, s := range fixtureSecrets {
			if strings.Contains(all, s) {
				t.Errorf("output (json %v, fix %v) shows secret %q", o.JSON, o.Fix, s)
			}
		}
	}
}
