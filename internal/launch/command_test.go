package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	good := []struct {
		argv []string
		want Command
		name string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp/a", "/tmp/b"},
			Command{Kind: "npx", Spec: "@modelcontextprotocol/server-filesystem", Package: "@modelcontextprotocol/server-filesystem", Args: []string{"/tmp/a", "/tmp/b"}},
			"modelcontextprotocol__server-filesystem"},
		{[]string{"/usr/local/bin/npx", "--yes", "@stripe/mcp@0.3.3", "--tools=all"},
			Command{Kind: "npx", Spec: "@stripe/mcp@0.3.3", Package: "@stripe/mcp", Version: "0.3.3", Args: []string{"--tools=all"}},
			"stripe__mcp"},
		{[]string{`C:\Program Files\nodejs\npx.cmd`, "-y", "tavily-mcp@latest"},
			Command{Kind: "npx", Spec: "tavily-mcp@latest", Package: "tavily-mcp", Version: "latest", Args: []string{}},
			"tavily-mcp"},
		{[]string{"npx", "-y", "--", "nx-mcp", "-y"},
			Command{Kind: "npx", Spec: "nx-mcp", Package: "nx-mcp", Args: []string{"-y"}},
			"nx-mcp"},
		{[]string{"uvx", "mcp-server-time", "--local-timezone=UTC"},
			Command{Kind: "uvx", Spec: "mcp-server-time", Package: "mcp-server-time", Args: []string{"--local-timezone=UTC"}},
			"mcp-server-time_pypi"},
		{[]string{"uvx", "Mcp_Server.Fetch==2025.4.7"},
			Command{Kind: "uvx", Spec: "Mcp_Server.Fetch==2025.4.7", Package: "Mcp_Server.Fetch", Version: "2025.4.7", Args: []string{}},
			"mcp-server-fetch_pypi"},
		{[]string{"npx", "-y", "-p", "@scope/tools@1.2.0", "tools-mcp", "--stdio"},
			Command{Kind: "npx", Spec: "@scope/tools@1.2.0", Package: "@scope/tools", Version: "1.2.0", Bin: "tools-mcp", Args: []string{"--stdio"}},
			"scope__tools"},
		{[]string{"npx", "--yes", "--package=pkg", "cmd"},
			Command{Kind: "npx", Spec: "pkg", Package: "pkg", Bin: "cmd", Args: []string{}},
			"pkg"},
		{[]string{"uvx", "--from", "mcp-server-git==2025.1.1", "mcp-server-git", "--repository", "."},
			Command{Kind: "uvx", Spec: "mcp-server-git==2025.1.1", Package: "mcp-server-git", Version: "2025.1.1", Bin: "mcp-server-git", Args: []string{"--repository", "."}},
			"mcp-server-git_pypi"},
		{[]string{"uvx", "--from=tools[cli]", "tools-serve"},
			Command{Kind: "uvx", Spec: "tools[cli]", Package: "tools", Bin: "tools-serve", Args: []string{}},
			"tools_pypi"},
		{[]string{"/usr/local/bin/github-mcp-server", "stdio"},
			Command{Kind: "exec", Program: "/usr/local/bin/github-mcp-server", Package: "github-mcp-server", Args: []string{"stdio"}},
			"github-mcp-server_local"},
		{[]string{"uvx", "mcp-server-git[cli]@1.0"},
			Command{Kind: "uvx", Spec: "mcp-server-git[cli]@1.0", Package: "mcp-server-git", Version: "1.0", Args: []string{}},
			"mcp-server-git_pypi"},
	}
	for _, g := range good {
		got, err := ParseCommand(g.argv)
		if err != nil {
			t.Errorf("%q: %v", g.argv, err)
			continue
		}
		if got.Args == nil {
			got.Args = []string{}
		}
		if !reflect.DeepEqual(got, g.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", g.argv, got, g.want)
		}
		if n := got.Name(); n != g.name {
			t.Errorf("%q: name %q, want %q", g.argv, n, g.name)
		}
	}
	bad := []struct {
		argv []string
		msg  string
	}{
		{nil, "no server command"},
		{[]string{"python", "server.py"}, `"python" cannot be caged: it runs a script`},
		{[]string{"node", "dist/index.js"}, `"node" cannot be caged: it runs a script`},
		{[]string{"/usr/bin/python3.12", "-m", "srv"}, "runs a script"},
		{[]string{"npx", "-p", "a"}, "no command given"},
		{[]string{"npx", "-p", "a", "-p", "b", "c"}, "more than one --package"},
		{[]string{"npx", "-p", "a", "../x"}, "is not a command name"},
		{[]string{"npx", "-c", "echo hi"}, "runs a shell command"},
		{[]string{"uvx", "--from", "git+https://example.invalid/x", "y"}, "not a registry package"},
		{[]string{"uvx", "--from", "x"}, "no command given"},
		{[]string{"docker", "run", "-i", "x"}, `"docker" cannot be caged`},
		{[]string{"npm", "exec", "x"}, "only npx and uvx"},
		{[]string{"uv", "run", "x"}, "only npx and uvx"},
		{[]string{"npx"}, "no package given"},
		{[]string{"npx", "-y"}, "no package given"},
		{[]string{"npx", "github:org/repo"}, "not a registry package"},
		{[]string{"npx", "https://example.invalid/x.tgz"}, "not a registry package"},
		{[]string{"npx", "./local"}, "not a registry package"},
		{[]string{"npx", "/abs/dir"}, "not a registry package"},
		{[]string{"npx", "bad name"}, "not an npm registry package name"},
		{[]string{"npx", "pkg@"}, "empty version"},
		{[]string{"npx", "--registry", "x", "y"}, `npx option "--registry"`},
		{[]string{"uvx", "git+https://example.invalid/x"}, "not a registry package"},
		{[]string{"uvx", "pkg>=1"}, "only an exact version"},
		{[]string{"uvx", "pkg[bad extra]"}, "only an exact version"},
		{[]string{"uvx"}, "no package given"},
	}
	for _, b := range bad {
		_, err := ParseCommand(b.argv)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: got %v, want a UsageError", b.argv, err)
			continue
		}
		if !strings.Contains(ue.Msg, b.msg) || ue.Fix == "" {
			t.Errorf("%q: %q (hint %q), want %q and a hint", b.argv, ue.Msg, ue.Fix, b.msg)
		}
	}
}

func TestDeriveName(t *testing.T) {
	long := strings.Repeat("a", 100)
	for _, c := range []struct{ kind, pkg, img, want string }{
		{"image", "", "ghcr.io/github/github-mcp-server:v1.2", "ghcr.io__github__github-mcp-server_image"},
		{"image", "", "mcp/fetch@sha256:0123", "mcp__fetch_image"},
		{"image", "", "docker.io/mcp/fetch:1", "mcp__fetch_image"},
		{"image", "", "localhost:5000/srv", "localhost_3a5000__srv_image"},
		{"image", "", "sha256:0123456789abcdef0123", "sha256_3a0123456789abcdef0123_image"},
		{"npx", "@a/b", "", "a__b"},
		{"npx", "tavily-mcp", "", "tavily-mcp"},
		{"npx", "Legacy_Name", "", "server_h" + hashOf("npx", "Legacy_Name")},
		{"uvx", "a__b..c", "", "a-b-c_pypi"},
		{"npx", "._-x", "", "server_h" + hashOf("npx", "._-x")},
		{"npx", "", "", "server_h" + hashOf("npx", "")},
		{"npx", long, "", strings.Repeat("a", 45) + "_h" + hashOf("npx", long)},
		{"remote", "https://mcp.example.com/mcp", "", "mcp.example.com__mcp_remote"},
		{"remote", "http://127.0.0.1:3001/mcp", "", "127.0.0.1_3a3001__mcp_h" + hashOf("remote", "http://127.0.0.1:3001/mcp")},
	} {
		got := DeriveName(c.kind, c.pkg, c.img)
		if got != c.want {
			t.Errorf("DeriveName(%q, %q, %q) = %q, want %q", c.kind, c.pkg, c.img, got, c.want)
		}
		if err := ValidName(got); err != nil {
			t.Errorf("DeriveName(%q, %q, %q) = %q: %v", c.kind, c.pkg, c.img, got, err)
		}
	}
	for _, bad := range []string{"", "-x", ".", "..", "a/b", "a b", strings.Repeat("x", 64), "é"} {
		if ValidName(bad) == nil {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
}

func hashOf(kind, id string) string {
	sum := sha256.Sum256([]byte(kind + ":" + id))
	return hex.EncodeToString(sum[:8])
}

// TestDeriveNameInjective: the launches that shared one name (and so one
// HOME and one approval) before get different names now.
func TestDeriveNameInjective(t *testing.T) {
	type launch struct{ kind, pkg, img string }
	groups := [][]launch{
		{{"image", "", "redteam-a/notes"}, {"image", "", "redteam-b/notes"}, {"image", "", "notes"}, {"image", "", "ghcr.io/redteam-a/notes"}},
		{{"npx", "@a/b-c", ""}, {"npx", "@a-b/c", ""}, {"npx", "a-b-c", ""}, {"uvx", "a-b-c", ""}, {"image", "", "a-b-c"}, {"npx", "a__b-c", ""}},
		{{"npx", "a_b", ""}, {"npx", "a_5fb", ""}, {"npx", "a-b_pypi", ""}, {"uvx", "a-b", ""}},
		{{"remote", "https://h/mcp", ""}, {"remote", "https://h/mcp/", ""}, {"remote", "https://h/mcp?key=${K}", ""}, {"remote", "http://h/mcp", ""},
			{"remote", "https://h:8443/mcp", ""}, {"npx", "h__mcp_remote", ""}, {"npx", "@h/mcp", ""}, {"image", "", "h/mcp"}},
		{{"npx", strings.Repeat("x", 70) + "1", ""}, {"npx", strings.Repeat("x", 70) + "2", ""}, {"npx", strings.Repeat("x", 45) + "_h" + hashOf("npx", strings.Repeat("x", 70)+"1"), ""}},
	}
	for _, g := range groups {
		seen := map[string]launch{}
		for _, l := range g {
			n := DeriveName(l.kind, l.pkg, l.img)
			if o, dup := seen[n]; dup {
				t.Errorf("%v and %v both get the name %q", o, l, n)
			}
			seen[n] = l
			if err := ValidName(n); err != nil {
				t.Errorf("%v: %q: %v", l, n, err)
			}
		}
	}
	// The same server, however it is written, keeps its name.
	for _, same := range [][2]launch{
		{{"image", "", "notes:1"}, {"image", "", "docker.io/library/notes@sha256:00"}},
		{{"uvx", "Mcp_Server.Fetch", ""}, {"uvx", "mcp-server-fetch", ""}},
	} {
		if a, b := DeriveName(same[0].kind, same[0].pkg, same[0].img), DeriveName(same[1].kind, same[1].pkg, same[1].img); a != b {
			t.Errorf("%v is %q but %v is %q", same[0], a, same[1], b)
		}
	}
}

func TestArgPaths(t *testing.T) {
	real := t.TempDir()
	args := []string{"--root=" + real, real, "relative", "/no/such/path", "-x", real + "/"}
	if got := ArgPaths(args); !reflect.DeepEqual(got, []string{real}) {
		t.Errorf("ArgPaths = %q", got)
	}
}
