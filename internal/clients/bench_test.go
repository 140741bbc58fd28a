package clients

import (
	"fmt"
	"strings"
	"testing"
)

// bigClaudeJSON is a ~/.claude.json as Claude Code grows it: many projects,
// each with history, a few with servers.
func bigClaudeJSON(projects int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"numStartups\": 812,\n  \"mcpServers\": {\n    \"everything\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-everything\"], \"env\": {}}\n  },\n  \"projects\": {\n")
	for i := 0; i < projects; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    \"/home/me/src/p%d\": {\n      \"allowedTools\": [],\n      \"history\": [", i)
		for h := 0; h < 20; h++ {
			if h > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{\"display\": \"fix the bug number %d in the checkout flow, then run the tests again\", \"pastedContents\": {}}", h)
		}
		b.WriteString("],\n      \"mcpServers\": {")
		if i%10 == 0 {
			fmt.Fprintf(&b, "\"memory\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-memory\"], \"env\": {\"MEMORY_FILE_PATH\": \"/home/me/src/p%d/.memory.json\"}}", i)
		}
		b.WriteString("}\n    }")
	}
	b.WriteString("\n  }\n}\n")
	return []byte(b.String())
}

// BenchmarkFixClaudeJSON measures caging every server of a large
// ~/.claude.json (500 projects, about 1.3 MB), checks included.
func BenchmarkFixClaudeJSON(b *testing.B) {
	c := Lookup("claude-code")
	data := bigClaudeJSON(500)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ch, err := Edit(c.Format, data, c.Tables, OpFix, exe, nil); err != nil || len(ch) != 51 {
			b.Fatal(err, len(ch))
		}
	}
}

// BenchmarkReadCodexTOML measures reading the Codex fixture.
func BenchmarkReadCodexTOML(b *testing.B) {
	data := readFixtureTB(b, "codex_config.toml")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(TOML, data, nil); err != nil {
			b.Fatal(err)
		}
	}
}
