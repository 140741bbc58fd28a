package clients

import (
	"reflect"
	"strings"
	"testing"
)

// JSON and JSONC files as people write them by hand: the caged file is
// compared byte for byte, so the layout of each args array is what a user
// finds after --fix, and unwrap gives back the very bytes they wrote.

var mcpServers = [][]string{{"mcpServers"}}

func TestJSONFixKeepsTheArrayLayout(t *testing.T) {
	for _, c := range []struct{ name, args, want string }{
		{"one line", `"npx", "args": ["-y", "pkg"]`,
			`["run", "--name=x", "--", "npx", "-y", "pkg"]`},
		// No space between the elements: the inserted ones still get one.
		{"compact", `"npx", "args": ["-y","pkg"]`,
			`["run", "--name=x", "--", "npx", "-y","pkg"]`},
		{"one a line", "\"npx\", \"args\": [\n    \"-y\",\n    \"pkg\"\n  ]",
			"[\n    \"run\",\n    \"--name=x\",\n    \"--\",\n    \"npx\",\n    \"-y\",\n    \"pkg\"\n  ]"},
		{"first on the opening line", "\"npx\", \"args\": [\"-y\",\n    \"pkg\"]",
			"[\"run\",\n    \"--name=x\",\n    \"--\",\n    \"npx\",\n    \"-y\",\n    \"pkg\"]"},
		// A comment between the elements is not copied between the new ones.
		{"comment between elements", `"npx", "args": ["-y", /* fetch it */ "pkg"]`,
			`["run", "--name=x", "--", "npx", "-y", /* fetch it */ "pkg"]`},
		{"one element", `"uvx", "args": ["mcp-server-time"]`,
			`["run", "--name=x", "--", "uvx", "mcp-server-time"]`},
		{"one element, spaced", `"uvx", "args": [ "mcp-server-time" ]`,
			`[ "run", "--name=x", "--", "uvx", "mcp-server-time" ]`},
		{"one element on its own line", "\"uvx\", \"args\": [\n    \"mcp-server-time\"\n  ]",
			"[\n    \"run\",\n    \"--name=x\",\n    \"--\",\n    \"uvx\",\n    \"mcp-server-time\"\n  ]"},
		{"one element after a comment", "\"uvx\", \"args\": [ // the server\n    \"mcp-server-time\"]",
			"[ // the server\n    \"run\", \"--name=x\", \"--\", \"uvx\", \"mcp-server-time\"]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := `{"mcpServers": {"x": {"command": ` + c.args + `}}}`
			want := `{"mcpServers": {"x": {"command": "` + exe + `", "args": ` + c.want + `}}}`
			out, ch, err := Edit(JSONC, []byte(in), mcpServers, OpFix, exe, nil)
			if err != nil || len(ch) != 1 {
				t.Fatalf("fix: %v, %d changes", err, len(ch))
			}
			if string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			back, _, err := Edit(JSONC, out, mcpServers, OpUnwrap, "", nil)
			if err != nil || string(back) != in {
				t.Errorf("unwrap(fix(x)) != x (%v):\n%s", err, back)
			}
		})
	}
}

// An entry caged by hand as the --fix hint says (command mcpcage, args
// ["run", "--", PROGRAM]) is unwrapped to the program with empty args.
func TestJSONUnwrapCommandAlone(t *testing.T) {
	in := `{"mcpServers": {"x": {"command": "mcpcage", "args": ["run", "--", "/bin/true"]}}}`
	out, ch, err := Edit(JSON, []byte(in), mcpServers, OpUnwrap, "", nil)
	if err != nil || len(ch) != 1 {
		t.Fatalf("unwrap: %v, %d changes", err, len(ch))
	}
	if want := `{"mcpServers": {"x": {"command": "/bin/true", "args": []}}}`; string(out) != want {
		t.Errorf("got %s", out)
	}
}

// An entry that repeats its args key is left for the person, by --fix and
// by unwrap alike: which of the two the client reads is its business.
func TestJSONRepeatedKeyLeftAlone(t *testing.T) {
	for _, in := range []string{
		`{"mcpServers": {"x": {"command": "npx", "args": ["-y", "a"], "args": ["-y", "b"]}}}`,
		`{"mcpServers": {"x": {"command": "mcpcage", "args": ["run", "--", "npx", "-y", "a"], "args": ["run", "--", "npx", "-y", "b"]}}}`,
	} {
		for _, op := range []Op{OpFix, OpUnwrap} {
			out, ch, err := Edit(JSON, []byte(in), mcpServers, op, exe, nil)
			if err != nil || len(ch) != 0 || string(out) != in {
				t.Errorf("op %d on %s: %s, %d changes, %v", op, in, out, len(ch), err)
			}
		}
	}
}

// What Read makes of the fields besides command and args.
func TestJSONRead(t *testing.T) {
	in := `{"mcpServers": {
  "off": {"command": "npx", "args": ["-y", "off"], "disabled": true},
  "on": {"command": "npx", "args": ["-y", "on"], "disabled": false},
  "enabled": {"command": "npx", "args": ["-y", "en"], "enabled": true},
  "not-enabled": {"command": "npx", "args": ["-y", "ne"], "enabled": false},
  "remote": {"serverUrl": "https://mcp.example.com/mcp", "httpUrl": ""},
  "number": {"command": 5, "args": ["-y", "n"]},
  "mixed": {"command": "npx", "args": ["-y", true]}
}}`
	srvs, err := Read(JSON, []byte(in), mcpServers)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name     string
		disabled bool
		url      string
		problem  string
	}
	var got []row
	for _, s := range srvs {
		got = append(got, row{s.Name, s.Disabled, s.URL, s.Problem})
	}
	want := []row{{"off", true, "", ""}, {"on", false, "", ""}, {"enabled", false, "", ""}, {"not-enabled", true, "", ""},
		{"remote", false, "https://mcp.example.com/mcp", ""},
		{"number", false, "", "its command is not a string"}, {"mixed", false, "", "its args are not all strings"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// A file that is not JSON is refused with the parser's reason, without the
// library's name in front.
func TestJSONNotValid(t *testing.T) {
	_, err := Read(JSON, []byte(`{"mcpServers": }`), mcpServers)
	if err == nil || !strings.HasPrefix(err.Error(), "not valid JSON: ") || strings.Contains(err.Error(), "hujson") {
		t.Errorf("got %v", err)
	}
}

// The flags Wrap.Flags gives (--home, --mount, ...) go between the --env
// flags and "--".
func TestFixWithFlags(t *testing.T) {
	in := `{"mcpServers": {"x": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}}}`
	w := Wrap{Exe: exe, Flags: func(Server) []string { return []string{"--home", "--mount=/data"} }}
	out, _, err := EditWith(JSON, []byte(in), mcpServers, OpFix, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mcpServers": {"x": {"command": "` + exe + `", "args": ["run", "--name=x", "--env=K", "--home", "--mount=/data", "--", "npx", "-y", "pkg"], "env": {"K": "v"}}}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
