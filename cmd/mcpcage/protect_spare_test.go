package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
)

// TestProtectFixMakesSpares: protect --fix makes the egress gateways of the
// servers it cages with --allow-host ahead of the client's restart, one
// each, as it installs their packages ahead; the first start after it
// claims one and reaches its host through it.
func TestProtectFixMakesSpares(t *testing.T) {
	cli, env, dir, home := spareSetup(t)
	cfg := filepath.Join(dir, "home", ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	// Two well-known servers that need one host each (known/servers.json).
	const pkg = "@modelcontextprotocol/server-github@2025.4.8"
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {
  "github": {"command": "npx", "args": ["-y", "`+pkg+`"]},
  "github-work": {"command": "npx", "args": ["-y", "`+pkg+`"]}
}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fix := exec.Command("mcpcage", "protect", "--fix", "--yes")
	fix.Env = testEnv(dir, env...)
	out, err := fix.CombinedOutput()
	if err != nil {
		t.Fatalf("protect --fix: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Made 2 egress gateways ahead") {
		t.Errorf("protect --fix does not say it made the two gateways ahead:\n%s", out)
	}
	if n, err := cage.ReadySpares(context.Background(), cli, home); err != nil || n != 2 {
		t.Fatalf("after protect --fix the home has %d spares ready (%v), want 2 (one for each server caged with --allow-host):\n%s", n, err, out)
	}

	// The client's restart: the first start claims one of them.
	args := []string{"--allow-host", "api.allowed.test", "--allow-private-addresses", "--name", "egress-probe", "--image", cagetest.ProbeImage}
	cs, stderr := caged(t, dir, env, args...)
	if n, err := cage.ReadySpares(context.Background(), cli, home); err != nil || n != 1 {
		t.Errorf("the first start after protect --fix left %d spares of 2 (%v): it did not claim one\nstderr:\n%s", n, err, stderr.String())
	}
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.allowed.test/"}); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("through the spare protect made, the allowed host was not reached: %s\nstderr:\n%s", out, stderr.String())
	}
}
