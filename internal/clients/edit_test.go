package clients

import (
	"strings"
	"testing"
)

// TestVerifyRefuses: the check Edit runs on its own result (the last line
// of defence against a bug in the editors) accepts the real edit and
// refuses each way a result can be wrong.
func TestVerifyRefuses(t *testing.T) {
	for _, f := range []Format{JSON, TOML} {
		in := `{"mcpServers": {"a": {"command": "npx", "args": ["-y", "a"]}, "b": {"command": "npx", "args": ["-y", "b"]}}}`
		if f == TOML {
			in = "[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", \"a\"]\n\n[mcp_servers.b]\ncommand = \"npx\"\nargs = [\"-y\", \"b\"]\n"
		}
		only := func(s Server) bool { return s.Name == "a" }
		out, ch, err := Edit(f, []byte(in), mcpServers, OpFix, exe, only)
		if err != nil || len(ch) != 1 {
			t.Fatalf("%v: fix: %v, %d changes", f, err, len(ch))
		}
		if err := verify(f, []byte(in), out, mcpServers, ch); err != nil {
			t.Errorf("%v: the real edit refused: %v", f, err)
		}
		res := string(out)
		bad := []struct{ result, why string }{
			{strings.Replace(res, `"-y", "b"`, `"-y", "c"`, 1), `entry "b" is not as intended`},
			{strings.Replace(res, `"npx", "-y", "a"`, `"npx", "-y", "z"`, 1), `entry "a" is not as intended`},
			{res[:len(res)/2], "the result does not parse"},
		}
		if f == JSON {
			bad = append(bad,
				struct{ result, why string }{strings.Replace(res, `"b": {`, `"c": {`, 1), `entry "b" moved`},
				struct{ result, why string }{strings.Replace(res, `}}}`, `}, "c": {"command": "x"}}}`, 1), "2 entries became 3"},
				struct{ result, why string }{strings.Replace(res, `{"mcpServers"`, `{/* caged */ "mcpServers"`, 1), "no longer strict JSON"})
		} else {
			bad = append(bad,
				struct{ result, why string }{strings.Replace(res, `[mcp_servers.b]`, `[mcp_servers.c]`, 1), `entry "b" moved`},
				struct{ result, why string }{res + "\n[mcp_servers.c]\ncommand = \"x\"\n", "2 entries became 3"})
		}
		for _, b := range bad {
			if err := verify(f, []byte(in), []byte(b.result), mcpServers, ch); err == nil || !strings.Contains(err.Error(), b.why) {
				t.Errorf("%v: %q: got %v, want %q", f, b.result, err, b.why)
			}
		}
		// The file before must itself parse.
		if err := verify(f, []byte(in[1:]), out, mcpServers, ch); err == nil || !strings.Contains(err.Error(), "not valid") {
			t.Errorf("%v: a file before that does not parse: %v", f, err)
		}
	}
}
