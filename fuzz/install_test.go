package fuzz

import (
	"path"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpcage/mcpcage/internal/install"
	"github.com/mcpcage/mcpcage/internal/launch"
)

// FuzzInstallSpec: whatever a client config says after npx/uvx, an accepted
// spec is a plain registry name and version that cannot turn into an
// installer flag, a URL, a path or a second shell word.
func FuzzInstallSpec(f *testing.F) {
	for _, s := range []string{"pkg", "@scope/pkg@1.2.3", "pkg@latest", "pkg@^1", "mcp-server-fetch==1.0", "pkg[a,b]@2", "-g",
		"git+https://x/y", "file:..", "pkg@npm:other", "./x", "Pkg_Name.x"} {
		f.Add("npx", s)
		f.Add("uvx", s)
	}
	f.Fuzz(func(t *testing.T, kind, s string) {
		sp, err := launch.ParseSpec(kind, s)
		if err != nil {
			return
		}
		req := sp.Requirement("")
		if strings.HasPrefix(req, "-") || strings.HasPrefix(sp.Name, "-") || strings.HasPrefix(sp.Version, "-") {
			t.Fatalf("%q: flag-like requirement %q", s, req)
		}
		if strings.Contains(req, ":") || strings.Contains(req, "../") || strings.Contains(req, "/..") || strings.HasPrefix(req, "/") || strings.HasPrefix(req, ".") {
			t.Fatalf("%q: URL or path-like requirement %q", s, req)
		}
		for _, r := range req {
			if unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII || strings.ContainsRune(`;&|$'"\`+"`"+`<>(){}`, r) && kind == "uvx" {
				t.Fatalf("%q: requirement %q holds %q", s, req, r)
			}
		}
		if kind == "npx" && strings.Count(sp.Name, "/") > 1 {
			t.Fatalf("%q: npm name %q has a path", s, sp.Name)
		}
		again, err := launch.ParseSpec(kind, req)
		if err != nil || again.Name != sp.Name || again.Exact != sp.Exact {
			t.Fatalf("%q: requirement %q does not parse back the same: %+v %v", s, req, again, err)
		}
	})
}

// FuzzInstallReport: an install container's report is written next to code
// we do not trust. Whatever it says, an accepted report names a command
// inside the package mount (or the image's node/python3) and carries no
// terminal control characters.
func FuzzInstallReport(f *testing.F) {
	f.Add([]byte("MCPCAGE-REPORT " + `{"name":"x","version":"1.2.3","command":["node","/srv/pkg/node_modules/x/cli.js"],"skipped":[{"name":"a","version":"1","scripts":["postinstall"]}]}`))
	f.Add([]byte("MCPCAGE-REPORT " + `{"name":"x","version":"1.0","command":["/srv/pkg/venv/bin/x"],"skipped":[]}`))
	f.Add([]byte("MCPCAGE-REPORT " + `{"name":"x","version":"","command":[],"skipped":[],"failure":{"kind":"source-only","package":"y","detail":"d"}}`))
	f.Add([]byte("noise\nMCPCAGE-REPORT {}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := install.ParseReport(b)
		if err != nil {
			return
		}
		printable := func(s string) {
			for _, c := range s {
				if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
					t.Fatalf("control character %q survived in %q", c, s)
				}
			}
		}
		if r.Failure != nil {
			printable(r.Failure.Package)
			printable(r.Failure.Detail)
			return
		}
		if len(r.Command) == 0 {
			t.Fatal("accepted a report with no command")
		}
		for i, a := range r.Command {
			if i == 0 && (a == "node" || a == "python3") {
				continue
			}
			if !strings.HasPrefix(a, install.MountPoint+"/") || path.Clean(a) != a {
				t.Fatalf("command %q escapes %s", a, install.MountPoint)
			}
		}
		printable(r.Version)
		for _, s := range r.Skipped {
			printable(s.Name)
			printable(s.Version)
			for _, x := range s.Scripts {
				printable(x)
			}
		}
	})
}
