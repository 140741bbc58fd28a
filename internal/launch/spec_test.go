package launch

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	good := []struct {
		kind, in       string
		name, ver, req string
		exact          bool
	}{
		{"npx", "pkg", "pkg", "", "pkg", false},
		{"npx", "pkg@1.2.3", "pkg", "1.2.3", "pkg@1.2.3", true},
		{"npx", "pkg@v1.2.3", "pkg", "1.2.3", "pkg@1.2.3", true},
		{"npx", "@scope/pkg", "@scope/pkg", "", "@scope/pkg", false},
		{"npx", "@scope/pkg@latest", "@scope/pkg", "latest", "@scope/pkg@latest", false},
		{"npx", "@modelcontextprotocol/server-filesystem@2025.8.21", "@modelcontextprotocol/server-filesystem", "2025.8.21", "@modelcontextprotocol/server-filesystem@2025.8.21", true},
		{"npx", "pkg@^1.2", "pkg", "^1.2", "pkg@^1.2", false},
		{"npx", "pkg@1.0.0-beta.1", "pkg", "1.0.0-beta.1", "pkg@1.0.0-beta.1", true},
		{"uvx", "mcp-server-fetch", "mcp-server-fetch", "", "mcp-server-fetch", false},
		{"uvx", "MCP_Server.Fetch==2025.1.1", "mcp-server-fetch", "2025.1.1", "mcp-server-fetch==2025.1.1", true},
		{"uvx", "mcp-server-git@1.0", "mcp-server-git", "1.0", "mcp-server-git==1.0", true},
		{"uvx", "mcp-server-git@latest", "mcp-server-git", "", "mcp-server-git", false},
		{"uvx", "pkg[cli,extra]==2.0", "pkg", "2.0", "pkg[cli,extra]==2.0", true},
	}
	for _, g := range good {
		sp, err := ParseSpec(g.kind, g.in)
		if err != nil {
			t.Errorf("%s %q: %v", g.kind, g.in, err)
			continue
		}
		if sp.Name != g.name || sp.Version != g.ver || sp.Exact != g.exact || sp.Requirement("") != g.req {
			t.Errorf("%s %q: got %+v req %q", g.kind, g.in, sp, sp.Requirement(""))
		}
	}
	bad := []struct{ kind, in string }{
		{"npx", ""}, {"npx", "-g"}, {"npx", "--registry=http://x"}, {"npx", "pkg@"}, {"npx", "pkg@-1"},
		{"npx", "https://example.invalid/x.tgz"}, {"npx", "git+ssh://git@host/x.git"}, {"npx", "github:user/repo"},
		{"npx", "./local"}, {"npx", "/abs/path"}, {"npx", "file:../x"}, {"npx", "alias@npm:pkg@1"},
		{"npx", "pkg@1.0.0 --foo"}, {"npx", "@scope/"}, {"npx", "a/b/c"}, {"npx", ".hidden"}, {"npx", "_under"},
		{"npx", "pkg\n"}, {"npx", strings.Repeat("a", 300)},
		{"uvx", ""}, {"uvx", "-e"}, {"uvx", "git+https://host/x"}, {"uvx", "./dist/x.whl"}, {"uvx", "pkg=="},
		{"uvx", "pkg==1.0; os_name=='nt'"}, {"uvx", "pkg[bad extra]"}, {"uvx", "pkg @ https://x/y.whl"},
		{"uvx", "pkg==--index-url"}, {"pip", "pkg"},
	}
	for _, b := range bad {
		if sp, err := ParseSpec(b.kind, b.in); err == nil {
			t.Errorf("%s %q accepted as %+v", b.kind, b.in, sp)
		}
	}
}
