package scan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToolNames(t *testing.T) {
	for _, c := range []struct {
		origin Origin
		name   string
		want   string // rule id, or "" for no finding
	}{
		{Origin{Package: "npx -y weather-now"}, "read_file", "tool-impersonation"},
		{Origin{Name: "todo"}, "SendEmail", "tool-impersonation"},
		{Origin{Package: "npx -y @modelcontextprotocol/server-filesystem /data"}, "read_file", ""},
		{Origin{Package: "npx -y @modelcontextprotocol/server-github", Name: "github"}, "search_repositories", ""},
		{Origin{Package: "docker.io/mcp/gitlab"}, "create_or_update_file", ""},
		{Origin{}, "read_file", ""},
		{Origin{}, "read_flie", "tool-lookalike"},
		{Origin{Package: "npx -y @modelcontextprotocol/server-filesystem"}, "read_flie", "tool-lookalike"},
		{Origin{}, "read_files", ""},
		{Origin{}, "search_notes", ""},
		{Origin{}, "rеad_file", ""}, // Cyrillic е: the same name to the model; mixed-script reports the letter
		{Origin{Package: "acme"}, "rеad_file", "tool-impersonation"},
		{Origin{}, "browser_navigat", "tool-lookalike"},
		{Origin{}, "get_forecast", ""},
	} {
		tool, _ := json.Marshal(map[string]string{"name": c.name, "description": "Does its job."})
		fs := ToolsFrom(c.origin, []json.RawMessage{tool}, nil)[0]
		got := ""
		for _, f := range fs {
			if f.Category == "impersonation" {
				got = f.Rule
				if f.Path != "name" {
					t.Errorf("%s: path %q, want name", c.name, f.Path)
				}
			}
		}
		if got != c.want {
			t.Errorf("%+v %s: got %q, want %q (%s)", c.origin, c.name, got, c.want, ids(fs))
		}
	}
}

func TestFoldName(t *testing.T) {
	for in, want := range map[string]string{
		"read_file": "readfile", "Read-File": "readfile", "readFile": "readfile", "READ.FILE": "readfile",
		"rеad_file": "readfile", "ｒｅａｄ＿ｆｉｌｅ": "readfile", "read file!": "",
	} {
		if got := foldName(in); got != want {
			t.Errorf("foldName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOneEdit(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"readfile", "readflie", true}, {"readfile", "readfil", true}, {"readfile", "readfiile", true},
		{"readfile", "readfi1e", true}, {"readfile", "readfixe", false}, {"readfile", "readfile", false},
		{"readfile", "reedfyle", false}, {"ab", "ba", true}, {"abc", "cab", false},
	} {
		if got := oneEdit(c.a, c.b); got != c.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestNameRune: exactly the characters of MCP tool names, [A-Za-z0-9_.-],
// are name characters (a sibling name with any other is not looked for).
func TestNameRune(t *testing.T) {
	for r := rune(0); r < 0x250; r++ {
		want := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-", r))
		if got := nameRune(r); got != want {
			t.Errorf("nameRune(%q) = %v, want %v", r, got, want)
		}
	}
}

// TestSiblingNames: the cross-tool check looks for other tools' names of at
// least three name characters; shorter ones and ones with other characters
// would match ordinary words.
func TestSiblingNames(t *testing.T) {
	sc := newScanner()
	for _, n := range []string{"ab", "a!b", "a b c", "abc", "get_x", "x.y-z"} {
		sc.addSibling(n)
	}
	for n, want := range map[string]bool{"ab": false, "a!b": false, "a b c": false, "abc": true, "get_x": true, "x.y-z": true} {
		if _, ok := sc.siblings[n]; ok != want {
			t.Errorf("sibling %q kept: %v, want %v", n, ok, want)
		}
	}
}

// TestShorten: a snippet of up to 60 runes is kept whole; a longer one is
// cut to 59 runes and an ellipsis, 60 in all.
func TestShorten(t *testing.T) {
	s60 := strings.Repeat("é", 60)
	if got := shorten(s60); got != s60 {
		t.Errorf("60 runes: %q", got)
	}
	if got, want := shorten(s60+"x"), strings.Repeat("é", 59)+"…"; got != want {
		t.Errorf("61 runes: %q, want %q", got, want)
	}
}
