package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/scan"
)

// TestScanNpmServers: `mcpcage scan -- npx -y PKG` starts each real npm
// server of testdata/npm-servers.tsv (a copy of the compatibility list,
// ../shared/compat/npm-servers.tsv) in the cage (real Docker, the
// install phase from the npm registry), lists it, and finds no
// high-severity sign of hidden instructions in its tools. Servers the
// compatibility notes say cannot start caged without an opt-in (network,
// install scripts) are left out.
func TestScanNpmServers(t *testing.T) {
	f, err := os.Open("testdata/npm-servers.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := stateDir(t) // one cache for all: each package is installed once
	work := t.TempDir()
	sc := bufio.NewScanner(f)
	scanned := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		col := strings.Split(line, "\t")
		if len(col) < 5 {
			t.Fatalf("bad line %q", line)
		}
		pkg, version, args, envs, notes := col[0], col[1], col[2], col[3], col[4]
		if strings.Contains(notes, "needs network") || strings.Contains(notes, "install script") {
			continue
		}
		argv := []string{"scan", "--json"}
		var env []string
		if envs != "-" {
			for _, kv := range strings.Fields(envs) {
				k, v, _ := strings.Cut(kv, "=")
				env = append(env, k+"="+strings.ReplaceAll(v, "@WORK@", work))
				argv = append(argv, "--env", k)
			}
		}
		argv = append(argv, "--", "npx", "-y", pkg+"@"+version)
		if args != "-" {
			argv = append(argv, strings.Fields(strings.ReplaceAll(args, "@WORK@", work))...)
		}
		t.Run(strings.ReplaceAll(pkg, "/", "_"), func(t *testing.T) {
			cmd := exec.Command("mcpcage", argv...)
			cmd.Env = testEnv(dir, env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			type item struct {
				Name     string         `json:"name"`
				Findings []scan.Finding `json:"findings"`
			}
			var rep struct {
				Tools []item `json:"tools"`
				Other []item `json:"other"` // the server's instructions
			}
			if jerr := json.Unmarshal(out, &rep); jerr != nil {
				t.Fatalf("mcpcage %s: %v (%v)\nstdout: %s\nstderr: %s", strings.Join(argv, " "), err, jerr, out, stderr.String())
			}
			if len(rep.Tools) == 0 {
				t.Fatalf("no tools listed\nstderr: %s", stderr.String())
			}
			high := 0
			for _, tl := range append(rep.Tools, rep.Other...) {
				for _, fd := range tl.Findings {
					if fd.Severity == scan.High {
						high++
						t.Errorf("tool %s: %+v", tl.Name, fd)
					} else {
						t.Logf("tool %s: %s %s %s: %q", tl.Name, fd.Severity, fd.Rule, fd.Path, fd.Snippet)
					}
				}
			}
			if err != nil && high == 0 {
				t.Errorf("exit status %v without a high-severity finding\nstderr: %s", err, stderr.String())
			}
			t.Logf("%d tools scanned", len(rep.Tools))
		})
		scanned++
	}
	if scanned < 8 {
		t.Errorf("only %d servers scanned", scanned)
	}
}
