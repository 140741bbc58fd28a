package known

import (
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/launch"
)

// The embedded table parses, and every package in it is one that mcpcage
// run accepts as written in a client config.
func TestTable(t *testing.T) {
	ss, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) < 10 {
		t.Fatalf("only %d servers", len(ss))
	}
	for _, s := range ss {
		argv := []string{"npx", "-y", s.Package}
		if s.Kind == "uvx" {
			argv = []string{"uvx", s.Package}
		}
		if _, err := launch.ParseCommand(argv); err != nil {
			t.Errorf("%s: %v", s.Package, err)
		}
	}
	m, ok := Lookup("npx", "@modelcontextprotocol/server-memory")
	if !ok || len(m.State) != 1 || m.State[0].Env != "MEMORY_FILE_PATH" || m.State[0].Default != "memory.jsonl" {
		t.Fatalf("server-memory: %+v %v", m, ok)
	}
	if g, _ := Lookup("npx", "@modelcontextprotocol/server-github"); len(g.Hosts) != 1 || g.Hosts[0] != "api.github.com" {
		t.Errorf("server-github's hosts: %v", g.Hosts)
	}
	if _, ok := Lookup("uvx", "MCP_Server.Fetch"); !ok {
		t.Error("uvx names are not looked up PEP 503 normalised")
	}
	if _, ok := Lookup("npx", "mcp-server-fetch"); ok {
		t.Error("a uvx package found as npx")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"unknown field", `{"servers":[{"kind":"npx","package":"a","network":"x","netwrk":"y"}]}`, "unknown field"},
		{"kind", `{"servers":[{"kind":"pip","package":"a","network":"x"}]}`, "kind"},
		{"version", `{"servers":[{"kind":"npx","package":"a@1.0","network":"x"}]}`, "without a version"},
		{"twice", `{"servers":[{"kind":"npx","package":"a","network":"x"},{"kind":"npx","package":"a","network":"y"}]}`, "twice"},
		{"empty", `{"servers":[{"kind":"npx","package":"a"}]}`, "says nothing"},
		{"env", `{"servers":[{"kind":"npx","package":"a","state":[{"env":"A-B","default":"x","what":"w"}]}]}`, "variable name"},
		{"absolute", `{"servers":[{"kind":"npx","package":"a","state":[{"env":"A","default":"/tmp/x","what":"w"}]}]}`, "inside the private HOME"},
		{"escape", `{"servers":[{"kind":"npx","package":"a","state":[{"env":"A","default":"../x","what":"w"}]}]}`, "inside the private HOME"},
		{"what", `{"servers":[{"kind":"npx","package":"a","state":[{"env":"A","default":"x"}]}]}`, "say what"},
		{"host", `{"servers":[{"kind":"npx","package":"a","network":"x","hosts":["10.0.0.1"]}]}`, "not an address"},
		{"hosts why", `{"servers":[{"kind":"npx","package":"a","writes":"x","hosts":["a.com"]}]}`, "without saying why"},
	} {
		_, err := Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
