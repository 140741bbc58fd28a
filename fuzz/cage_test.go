package fuzz

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/launch"
)

// FuzzParseCommand: a client config's command line (untrusted: protect --fix
// rewrites whatever configs say) either parses into a cageable command whose
// parts are consistent, or is refused with a UsageError that has a hint.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"npx\x00-y\x00@modelcontextprotocol/server-filesystem\x00/tmp",
		"npx\x00@stripe/mcp@0.3.3\x00--tools=all",
		"uvx\x00mcp-server-time==1.0\x00--x",
		"uvx\x00a[b,c]@2",
		"python\x00server.py",
		"npx\x00-y\x00--\x00pkg\x00--",
		"npx\x00github:a/b",
		"C:\\npx.cmd\x00x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		c, err := launch.ParseCommand(argv)
		if err != nil {
			var ue *launch.UsageError
			if !errors.As(err, &ue) || ue.Msg == "" || ue.Fix == "" {
				t.Fatalf("%q: %v is not a UsageError with a hint", argv, err)
			}
			return
		}
		if c.Kind == "exec" {
			// A local program: checked on the host by FindProgram.
			if c.Program != argv[0] || len(c.Args) != len(argv)-1 || launch.IsInterpreter(c.Program) {
				t.Fatalf("%q: program %q, args %q", argv, c.Program, c.Args)
			}
			if err := launch.ValidName(c.Name()); err != nil {
				t.Fatalf("%q: derived name: %v", argv, err)
			}
			return
		}
		if c.Kind != "npx" && c.Kind != "uvx" {
			t.Fatalf("%q: kind %q", argv, c.Kind)
		}
		if c.Package == "" || !strings.HasPrefix(c.Spec, c.Package) {
			t.Fatalf("%q: package %q, spec %q", argv, c.Package, c.Spec)
		}
		if strings.ContainsAny(c.Package, ":/\\ ") && !(c.Kind == "npx" && strings.HasPrefix(c.Package, "@") && strings.Count(c.Package, "/") == 1) {
			t.Fatalf("%q: package %q is not a plain registry name", argv, c.Package)
		}
		if len(c.Args) > len(argv) {
			t.Fatalf("%q: more args than given", argv)
		}
		if err := launch.ValidName(c.Name()); err != nil {
			t.Fatalf("%q: derived name: %v", argv, err)
		}
		// What run accepts, the install phase installs.
		if _, err := launch.ParseSpec(c.Kind, c.Spec); err != nil {
			t.Fatalf("%q: accepted by ParseCommand, refused by launch.ParseSpec: %v", argv, err)
		}
	})
}

// FuzzMountSpec: a --mount value (from a client config) gives a clean
// absolute path, and the :rw suffix is the only way to ask for write access.
func FuzzMountSpec(f *testing.F) {
	for _, s := range []string{"/tmp", "/tmp:rw", "/tmp:ro", "~/x:rw", "rel/dir", ":rw", "/a:b:rw", "/a:rw:ro", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		target, rw, err := cage.ParseMountSpec(spec)
		if err != nil {
			return
		}
		if !filepath.IsAbs(target) || filepath.Clean(target) != target || strings.ContainsRune(target, 0) {
			t.Fatalf("%q: target %q is not a clean absolute path", spec, target)
		}
		if rw != strings.HasSuffix(spec, ":rw") {
			t.Fatalf("%q: writable %v", spec, rw)
		}
	})
}

// FuzzReadOnlyPath: a server's stderr line (untrusted) yields either nothing
// or an absolute path taken from the line itself.
func FuzzReadOnlyPath(f *testing.F) {
	for _, s := range []string{
		"Error: ENOENT: no such file or directory, mkdir '/home/mcp/x'",
		"EROFS: read-only file system, open \"/srv/a\"",
		"[Errno 30] Read-only file system: '/x'",
		"EROFS '",
		"EROFS0000\"/'\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p := cage.ReadOnlyPath(line)
		if p == "" {
			return
		}
		if !strings.HasPrefix(p, "/") || !strings.Contains(line, p) || strings.ContainsAny(p, "'\"") {
			t.Fatalf("%q: path %q", line, p)
		}
		if !utf8.ValidString(line) {
			return
		}
	})
}

// FuzzDeriveName: whatever a config names, the derived server name is safe as
// a file name and a container name.
func FuzzDeriveName(f *testing.F) {
	f.Add("npx", "@scope/pkg", "")
	f.Add("image", "", "ghcr.io/a/b:1@sha256:00")
	f.Add("uvx", "A..B__c", "")
	f.Fuzz(func(t *testing.T, kind, pkg, img string) {
		n := launch.DeriveName(kind, pkg, img)
		if err := launch.ValidName(n); err != nil {
			t.Fatalf("DeriveName(%q, %q, %q) = %q: %v", kind, pkg, img, n, err)
		}
		// Injective: a server of another identity, however close, gets
		// another name (the scope dropped, a '/' or '_' moved, another kind).
		for _, o := range [][3]string{
			{"npx", strings.ReplaceAll(pkg, "/", "-"), ""}, {"npx", strings.ReplaceAll(pkg, "-", "/"), ""},
			{"npx", strings.TrimPrefix(pkg, "@"), ""}, {"uvx", pkg, ""}, {"image", "", pkg}, {"image", "", img + "x"},
		} {
			if launch.Identity(o[0], o[1], o[2]) != launch.Identity(kind, pkg, img) && launch.DeriveName(o[0], o[1], o[2]) == n {
				t.Fatalf("%q %q %q and %q share the name %q", kind, pkg, img, o, n)
			}
		}
	})
}
